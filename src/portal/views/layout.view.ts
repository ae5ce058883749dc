/** The frame of every portal page: head, header with the account and navigation, notices, main. */
import { csrfField } from './components.js';
import { html, type SafeHtml } from '../../lib/html.js';

export type NavKey = 'overview' | 'keys' | 'webhooks' | 'agents' | 'calls' | 'batches' | 'requests' | 'suppressions' | 'docs';

const nav: readonly (readonly [NavKey, string, string])[] = [
  ['overview', 'Overview', '/developers'],
  ['keys', 'API keys', '/developers/api-keys'],
  ['webhooks', 'Webhooks', '/developers/webhooks'],
  ['agents', 'Agents', '/developers/agents'],
  ['calls', 'Calls', '/developers/calls'],
  ['batches', 'Batches', '/developers/batches'],
  ['suppressions', 'Suppressions', '/developers/suppressions'],
  ['requests', 'Request log', '/developers/requests'],
  // Outside the portal: the API reference rendered from the OpenAPI document (src/features/openapi).
  ['docs', 'API reference', '/docs'],
];

/** Messages shown after a redirect (`?notice=`); only these fixed texts can appear, never request input. */
export const notices = {
  signed_out: 'You are signed out.',
  key_revoked: 'The key is revoked. Every request with it now gets 401 unauthorized.',
  endpoint_created: 'The endpoint is added. Reveal its signing secret below to verify deliveries.',
  endpoint_updated: 'The endpoint is saved.',
  endpoint_deleted: 'The endpoint is deleted. Its delivery history is kept.',
  secret_rotated:
    'The secret is rotated. Reveal the new one below and give it to your receiver: for 24 hours deliveries are signed with the old and the new secret.',
  test_sent: 'A webhook.test event is on its way. Its attempt shows below; reload the page if it is not there yet.',
  resent: 'The event is queued for delivery again. Its attempt shows below; reload the page if it is not there yet.',
  suppression_added: 'The number is on the list: it is not called any more, in test or live mode.',
  suppression_exists: 'The number was already on the list; its entry is unchanged.',
  suppression_removed: 'The number is off the list: it may be called again.',
  call_cancelling:
    'The voice provider agreed to end the call. Its outcome follows as usual: failed (cancelled) if nobody had answered, completed otherwise.',
} as const;
export type NoticeKey = keyof typeof notices;

export function noticeFor(code: unknown): string | undefined {
  return typeof code === 'string' && Object.hasOwn(notices, code) ? notices[code as NoticeKey] : undefined;
}

export interface PageFrame {
  readonly title: string;
  /** Signed-in user: shows navigation and the sign-out button. */
  readonly user?: { readonly email: string; readonly accountId: string; readonly accountName: string; readonly csrfToken: string };
  readonly active?: NavKey;
  readonly notice?: string | undefined;
  readonly error?: string | undefined;
  /** portal.js replaces the address with this one (a page answering a POST, so a reload does not repeat it). */
  readonly replaceUrl?: string;
}

export function layout(frame: PageFrame, main: SafeHtml): string {
  const { user } = frame;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · callgate developers</title>
<link rel="stylesheet" href="/developers/assets/portal.css">
<script src="/developers/assets/portal.js" defer></script>
</head>
<body${frame.replaceUrl ? html` data-replace-url="${frame.replaceUrl}"` : ''}>
<a class="skip" href="#main">Skip to content</a>
<header class="topbar">
  <div class="topbar-inner">
    <a class="brand" href="/developers">callgate <span>developers</span></a>
    ${
      user
        ? html`<div class="account">
    <span class="account-name" title="Account ${user.accountId}">${user.accountName}</span>
    <span class="account-user">${user.email}</span>
    <form method="post" action="/developers/sign-out" class="inline">${csrfField(user.csrfToken)}<button type="submit" class="button button-small button-quiet">Sign out</button></form>
  </div>`
        : ''
    }
  </div>
  ${
    user
      ? html`<nav class="nav" aria-label="Portal"><ul>${nav.map(
          ([key, label, href]) => html`<li><a href="${href}"${key === frame.active ? html` aria-current="page"` : ''}>${label}</a></li>`,
        )}</ul></nav>`
      : ''
  }
</header>
<main id="main" class="main">
${frame.notice ? html`<div class="notice notice-ok" role="status">${frame.notice}</div>` : ''}
${frame.error ? html`<div class="notice notice-bad" role="alert">${frame.error}</div>` : ''}
${main}
</main>
</body>
</html>
`.value;
}
