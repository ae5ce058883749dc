/**
 * What the portal's pages take: path ids, query parameters and the fields of their forms. Forms and query
 * strings carry text only, and a browser leaves out an empty checkbox and may repeat a field: each field is
 * the text its form sends (or a list, for checkboxes), with a default where the page may leave it out. Other
 * fields are let through, as a browser's form may carry more (a submit button's name). The checks that
 * answer with a message on the form's own page (a key's name, an endpoint's URL) stay with the routes.
 */
import { Type, type TProperties } from '@sinclair/typebox';
import { providerCatalogue } from '../features/providers/provider-catalogue.js';

/** Ids in our URLs are short and plain; anything else (a NUL byte, a slash) names no resource: a 404. */
export const PlainIdPattern = '^[A-Za-z0-9_-]{1,200}$';
const PlainId = Type.String({ pattern: PlainIdPattern });

export const IdParams = Type.Object({ id: PlainId });
export const DeliveryParams = Type.Object({ id: PlainId, deliveryId: PlainId });

/** A field a form may leave out: the empty text then. */
const Field = (defaultValue = '') => Type.String({ default: defaultValue });

/** Every POST form of a signed-in page (and the sign-in form) carries the CSRF token of its page. */
export function PortalForm<T extends TProperties>(fields: T) {
  return Type.Object({ ...fields, _csrf: Field() });
}

export const EmptyForm = PortalForm({});

/** The Agents page's sync: which provider's workspace (the catalogue's first, ElevenLabs, when left out, as before there were others). */
export const AgentSyncForm = PortalForm({ provider: Field(providerCatalogue[0].name) });

export const SignInForm = PortalForm({ email: Field(), password: Field(), next: Field() });
export const SignInQuery = Type.Object({ next: Type.Optional(Type.String()), notice: Type.Optional(Type.String()) });

/** The notice of a page after a redirect (`?notice=key_revoked`); an unknown one shows nothing. */
export const NoticeQuery = Type.Object({ notice: Type.Optional(Type.String()) });

export const KeyForm = PortalForm({ name: Field(), mode: Field('test'), form_token: Field() });

export const EndpointForm = PortalForm({
  url: Field(),
  description: Field(),
  event_types: Type.Array(Type.String(), { default: [] }),
  // A checkbox: 'on' when ticked, absent when not.
  enabled: Type.Optional(Type.String()),
  // Radio buttons on the new-endpoint form only ('test' or 'live'); an endpoint keeps its mode.
  mode: Type.Optional(Type.String()),
});

export const ResendForm = PortalForm({ back: Field() });

/** The calls page's filters: a value that names no status or no plain id filters nothing. */
export const CallsQuery = Type.Object({
  status: Type.Optional(Type.String()),
  agent_id: Type.Optional(Type.String()),
  starting_after: Type.Optional(Type.String()),
});

/** The overview's charts: `period` 24h or 30d, `mode` test or live; any other value is ignored. */
export const OverviewQuery = Type.Object({ period: Type.Optional(Type.String()), mode: Type.Optional(Type.String()) });

export const RequestsQuery = Type.Object({ request_id: Type.Optional(Type.String()), before: Type.Optional(Type.String()) });

/** The batches list's filters, as the calls page's. */
export const BatchesQuery = Type.Object({
  status: Type.Optional(Type.String()),
  mode: Type.Optional(Type.String()),
  starting_after: Type.Optional(Type.String()),
  notice: Type.Optional(Type.String()),
});

/** A batch page: its recipients' filter and page. */
export const BatchQuery = Type.Object({
  status: Type.Optional(Type.String()),
  starting_after: Type.Optional(Type.String()),
  notice: Type.Optional(Type.String()),
});

/**
 * The new batch form (multipart, so that it carries a file; or urlencoded): the CSV comes as the file
 * `csv_file` (its bytes) or the text `csv_text`.
 */
export const BatchForm = PortalForm({
  form_token: Field(),
  api_key_id: Field(),
  agent_id: Field(),
  name: Field(),
  scheduled_at: Field(),
  max_concurrency: Field(),
  window_start: Field(),
  window_end: Field(),
  // Checkboxes: the values ticked (see portal-batches.routes.ts).
  window_days: Type.Array(Type.String(), { default: [] }),
  window_time_zone: Field(),
  window_fallback_time_zone: Field(),
  retry_on: Type.Array(Type.String(), { default: [] }),
  retry_max_attempts: Field('1'),
  retry_delay_minutes: Field('30'),
  csv_text: Field(),
  // The file's text, or null when it is not UTF-8 (see portal-batches.routes.ts); absent without a file.
  csv_file: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});

/** The suppression list's forms: add one number, remove one, import a file of them (its text). */
export const SuppressionForm = PortalForm({ to: Field(), reason: Field() });
export const SuppressionImportForm = PortalForm({ csv: Field(), reason: Field() });
export const SuppressionsQuery = Type.Object({ notice: Type.Optional(Type.String()), starting_after: Type.Optional(Type.String()) });
export const SuppressionNumberQuery = Type.Object({ to: Type.Optional(Type.String()) });
