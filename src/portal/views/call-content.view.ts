/** What was said on a call (its page's card): the analysis, the transcript as a conversation, the recording. */
import type { CallTranscript } from '../../features/calls/calls.schemas.js';
import type { CallWithMode } from '../../features/calls/calls.service.js';
import type { CallAnalysis } from '../../features/events/call-analysis.schema.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { badge, portalPath } from './components.js';

/** An ended call's content, as the page shows it; null before the call's end. */
export interface CallContentView {
  readonly turns: CallTranscript['turns'];
  /** Whether the call has a recording at its provider (the player and the download show then). */
  readonly hasRecording: boolean;
}

/** A time into the call as m:ss (`1:05`), whole seconds. */
export function offsetText(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`;
}

function judgement(successful: boolean | null): SafeHtml {
  if (successful === true) return badge('yes', 'ok');
  if (successful === false) return badge('no', 'bad');
  return badge('no judgement', 'neutral');
}

function dataValue(value: CallAnalysis['data'][string]): SafeHtml {
  if (value === null) return html`<span class="muted">null</span>`;
  if (typeof value === 'string') return html`${value}`;
  return html`<code>${String(value)}</code>`;
}

function analysisFacts(analysis: CallAnalysis | undefined): SafeHtml {
  const entries = Object.entries(analysis?.data ?? {});
  return html`<dl class="facts analysis">
  <dt>Successful</dt><dd class="analysis-successful">${judgement(analysis?.successful ?? null)}</dd>
  <dt>Data</dt><dd>${
    entries.length === 0
      ? html`<span class="muted">none</span>`
      : html`<dl class="facts compact analysis-data">${entries.map(([key, value]) => html`<dt><code>${key}</code></dt><dd>${dataValue(value)}</dd>`)}</dl>`
  }</dd>
</dl>`;
}

function transcript(turns: CallTranscript['turns']): SafeHtml {
  if (turns.length === 0) {
    return html`<p class="empty transcript-empty">No transcript: the provider kept none for this call, or the retention period for call content has passed.</p>`;
  }
  return html`<ol class="transcript" aria-label="Transcript">${turns.map(
    (turn) => html`<li class="turn turn-${turn.role}">
  <p class="turn-head"><span class="turn-who">${turn.role === 'agent' ? 'Agent' : 'User'}</span>${
    turn.offset_seconds === null
      ? ''
      : html` <span class="turn-at muted small" title="${`${turn.offset_seconds} s into the call`}">${offsetText(turn.offset_seconds)}</span>`
  }</p>
  <p class="turn-text">${turn.text}</p>
</li>`,
  )}</ol>`;
}

function recording(call: CallWithMode, hasRecording: boolean): SafeHtml {
  if (!hasRecording) {
    return html`<p class="empty">No recording: the provider kept none for this call, or the retention period for call content has passed.</p>`;
  }
  const src = portalPath('calls', call.id, 'recording');
  return html`<div class="recording">
  <audio controls preload="none" src="${src}" aria-label="Recording of the call">
    <a href="${src}">Download the recording</a>
  </audio>
  <a class="button button-small button-quiet" href="${src}" download>Download</a>
</div>`;
}

/** The card "What was said": before the call's end, a line saying when it fills. */
export function callContentSection(call: CallWithMode, content: CallContentView | null): SafeHtml {
  const body = content
    ? html`<h3>Analysis</h3>
  ${analysisFacts(call.analysis)}
  <h3>Recording</h3>
  ${recording(call, content.hasRecording)}
  <h3>Transcript</h3>
  ${transcript(content.turns)}`
    : html`<p class="empty">The analysis, the transcript and the recording appear here once the call has ended.</p>`;
  return html`<section class="card call-content" aria-labelledby="said">
  <h2 id="said">What was said</h2>
  ${body}
</section>`;
}
