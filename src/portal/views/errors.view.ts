/** Portal error pages: HTML, with the request id to quote (the /v1 API keeps its JSON errors). */
import { html } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

export interface ErrorPageInput {
  readonly status: number;
  readonly title: string;
  readonly message: string;
  readonly requestId: string;
  readonly user?: PageFrame['user'];
}

export function errorPage(input: ErrorPageInput): string {
  return layout(
    { title: input.title, ...(input.user ? { user: input.user } : {}) },
    html`<section class="card narrow error-page">
  <p class="eyebrow">Error ${input.status}</p>
  <h1>${input.title}</h1>
  <p>${input.message}</p>
  <p class="muted small">Request id <code>${input.requestId}</code></p>
  <p><a class="button" href="/developers">Back to the overview</a></p>
</section>`,
  );
}
