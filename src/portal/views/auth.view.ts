import { csrfField } from './components.js';
import { html } from '../../lib/html.js';
import { layout } from './layout.view.js';

export interface SignInPageInput {
  /** The sign-in form's CSRF token, the same as in its cookie. */
  readonly csrfToken: string;
  readonly email?: string;
  readonly next?: string | undefined;
  readonly error?: string | undefined;
  readonly notice?: string | undefined;
}

export function signInPage(input: SignInPageInput): string {
  return layout(
    { title: 'Sign in', notice: input.notice },
    html`<section class="card narrow signin">
  <h1>Sign in</h1>
  <p class="muted">to manage the API keys, webhooks and calls of your account.</p>
  ${input.error ? html`<div class="notice notice-bad" role="alert">${input.error}</div>` : ''}
  <form method="post" action="/developers/sign-in" class="stack">
    ${csrfField(input.csrfToken)}
    ${input.next ? html`<input type="hidden" name="next" value="${input.next}">` : ''}
    <div class="field">
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required value="${input.email ?? ''}" ${input.email ? '' : 'autofocus'}>
    </div>
    <div class="field">
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required ${input.email ? 'autofocus' : ''}>
    </div>
    <button type="submit" class="button button-primary">Sign in</button>
  </form>
  <p class="muted small">No account yet? Your callgate operator creates users with <code>npx callgate users add</code>.</p>
</section>`,
  );
}
