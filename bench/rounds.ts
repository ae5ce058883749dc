/**
 * Targets measured in rounds. On a shared machine one run of a target can be a third faster or slower than the
 * next, so each round runs every compared target once, in turn, and two targets are compared within a round
 * (both ran under the same load from the rest of the machine), the report giving the median of those per-round
 * comparisons. A target's own figures are those of its median round: one real run, so a row's columns agree.
 */

export interface Rounds<M> {
  /** One run per round, in round order. */
  readonly runs: readonly M[];
  /** The run whose key figure is the median; of an even count, the lower of the middle two. */
  readonly median: M;
}

export function roundsOf<M>(runs: readonly M[], key: (m: M) => number): Rounds<M> {
  if (runs.length === 0) throw new Error('a target needs at least one round');
  const sorted = [...runs].sort((a, b) => key(a) - key(b));
  return { runs, median: sorted[Math.floor((sorted.length - 1) / 2)]! };
}

/** The median; of an even count, the mean of the middle two. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** One comparison of two targets made within each round, and its median. */
export interface PerRound {
  readonly median: number;
  /** In round order. */
  readonly rounds: readonly number[];
}

/** `compare` applied to the two targets' runs of each round. */
export function perRound<A, B>(a: Rounds<A>, b: Rounds<B>, compare: (a: A, b: B) => number): PerRound {
  if (a.runs.length !== b.runs.length) throw new Error('targets compared must have run the same rounds');
  const rounds = a.runs.map((run, i) => compare(run, b.runs[i]!));
  return { median: median(rounds), rounds };
}

/** A target's own figure in each round, and its median over the rounds. */
export function overRounds<M>(r: Rounds<M>, figure: (m: M) => number): PerRound {
  const rounds = r.runs.map(figure);
  return { median: median(rounds), rounds };
}

/** A comparison as the report prints it: "67 % (rounds 65 / 67 / 70 %)", or "67 %" when there was one round. */
export function withRounds(p: PerRound, format: (n: number) => string, unit: string): string {
  const figure = `${format(p.median)}${unit}`;
  return p.rounds.length > 1 ? `${figure} (rounds ${p.rounds.map(format).join(' / ')}${unit})` : figure;
}

/** Each round's key figure of a target: "2,010 / 2,092 / 1,980". */
export function eachRound<M>(r: Rounds<M>, key: (m: M) => number, format: (n: number) => string): string {
  return r.runs.map((m) => format(key(m))).join(' / ');
}
