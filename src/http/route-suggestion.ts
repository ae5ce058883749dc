/**
 * The route a mistyped /v1 URL most likely meant, for its 404: the API's routes are learned as they are
 * added, and an unknown path is compared with each, segment by segment (a `:param` matches any one segment;
 * literal segments by edit distance), so `/v1/call/x` points at `/v1/calls/{id}` and `POST
 * /v1/calls/x/stop` at `POST /v1/calls/{id}/cancel`. Nothing is suggested when no route is close.
 */
import { distance } from 'fastest-levenshtein';

export interface KnownRoute {
  readonly method: string;
  /** Fastify's form, `/v1/calls/:id/cancel`. */
  readonly url: string;
}

/** The most edits a suggestion may need across its literal segments, and per segment. */
const maxEdits = 4;

function segmentsOf(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '');
}

/** Edits between a path and a route of as many segments; Infinity when they cannot be the same route. */
function editsTo(path: readonly string[], route: readonly string[]): number {
  if (path.length !== route.length) return Number.POSITIVE_INFINITY;
  let edits = 0;
  for (const [index, part] of route.entries()) {
    if (part.startsWith(':')) continue;
    const segment = path[index]!.toLowerCase();
    const cost = distance(segment, part);
    // A segment wholly unlike the route's is another route, not a typo of this one.
    if (cost > Math.max(1, Math.floor(part.length / 2))) return Number.POSITIVE_INFINITY;
    edits += cost;
  }
  return edits;
}

/** `METHOD /v1/…/{id}` of the closest route to `method path`, or undefined. A route of the same method wins a tie. */
export function closestRoute(routes: readonly KnownRoute[], method: string, path: string): string | undefined {
  const parts = segmentsOf(path);
  let best: { route: KnownRoute; score: number } | undefined;
  for (const route of routes) {
    const edits = editsTo(parts, segmentsOf(route.url));
    if (edits > maxEdits) continue;
    // Half an edit for another method: the path weighs more than the verb.
    const score = edits + (route.method === method ? 0 : 0.5);
    if (!best || score < best.score) best = { route, score };
  }
  if (!best) return undefined;
  return `${best.route.method} ${best.route.url.replace(/:(\w+)/g, '{$1}')}`;
}
