export interface PortalFormTokensTable {
  /** The random token of one key-creation form, used once. */
  token: string;
  account_id: string;
  /** The key the form made; null only while that transaction is under way. */
  api_key_id: string | null;
  created_at: string;
}

export interface PortalTables {
  portal_form_tokens: PortalFormTokensTable;
}
