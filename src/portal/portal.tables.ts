export interface PortalFormTokensTable {
  /** The random token of one creating form (a key, a batch), used once. */
  token: string;
  account_id: string;
  /** The key the form made; null while that transaction is under way, and for a batch form. */
  api_key_id: string | null;
  created_at: string;
}

export interface PortalTables {
  portal_form_tokens: PortalFormTokensTable;
}
