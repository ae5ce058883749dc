/**
 * Reads a V8 CPU profile (.cpuprofile, as `node --cpu-prof` or the inspector writes it) and says where the
 * busy time went: self time per component (a family of npm packages, our code, SQLite, GC) and the functions
 * with the most self time.
 */
import fs from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface Share {
  readonly name: string;
  /** Share of the busy (non-idle) time, 0–1. */
  readonly share: number;
}

export interface ProfileSummary {
  readonly busyMs: number;
  /** Share of the profiled wall time the main thread was idle. */
  readonly idleShare: number;
  readonly components: readonly Share[];
  readonly functions: readonly Share[];
}

function packageOf(url: string): string | null {
  const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  return match?.[1] ?? null;
}

/** Families of packages, named for what they do here. */
const families: readonly [RegExp, string][] = [
  [
    /^(fastify|@fastify\/.*|find-my-way|avvio|fast-json-stringify|ajv|ajv-formats|fast-uri|secure-json-parse|toad-cache|light-my-request|fast-querystring|process-warning|abstract-logging|rfdc|json-schema-ref-resolver|proxy-addr|forwarded|ipaddr\.js|content-type|ret|safe-regex2|fast-decode-uri-component|fastq|reusify)$/,
    'Fastify (routing, hooks, validation, serialisation, replies)',
  ],
  [/^kysely$/, 'Kysely (building and compiling queries)'],
  [/^better-sqlite3$/, 'better-sqlite3 (JavaScript part)'],
  [
    /^(pg|pg-protocol|pg-pool|pg-types|pg-connection-string|postgres-.*|pgpass|split2|buffer-writer|packet-reader)$/,
    'pg driver (protocol, socket I/O)',
  ],
  [
    /^(pino|sonic-boom|@pinojs\/.*|safe-stable-stringify|fast-redact|thread-stream|on-exit-leak-free|atomic-sleep|quick-format-unescaped|pino-std-serializers)$/,
    'pino logging (incl. writing the log)',
  ],
  [/^rate-limiter-flexible$/, 'rate-limiter-flexible'],
];

/** The component a script belongs to, or null for Node's own code (charged to its caller instead). */
function ownerOf(url: string): string | null {
  if (!url || url.startsWith('node:')) return null;
  const pkg = packageOf(url);
  if (pkg) return families.find(([pattern]) => pattern.test(pkg))?.[1] ?? `npm: ${pkg}`;
  // bench/ under tsx; .bench-build/ where the server script runs transpiled (transpile.ts).
  if (/\/(bench|\.bench-build)\//.test(url)) return 'benchmark instrumentation (statement counter)';
  if (/\/(dist|src)\//.test(url)) return 'callgate code';
  return null;
}

/** better-sqlite3's native entry points: compiling a statement, and running one. */
const sqliteNatives = new Set(['Statement', 'run', 'all', 'get', 'iterate', 'exec']);
/** Scripts that call them: better-sqlite3 itself, Kysely's SQLite driver, our statement cache, the bench's counter. */
const sqliteCaller =
  /node_modules\/better-sqlite3\/|kysely\/dist\/esm\/dialect\/sqlite\/|\/db\/database\.js|\/bench\/serve-target\.ts|\/\.bench-build\/serve-target\.js/;

function describe(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return `${name} (native)`;
  const pkg = packageOf(frame.url);
  const file = frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(dist|src)\//, '$1/');
  return `${name} — ${pkg ? file : file.replace(/^file:\/\//, '')}:${frame.lineNumber + 1}`;
}

export function summariseProfile(file: string, top = 12): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);

  const calledFromSqlite = (node: ProfileNode): boolean => {
    let up = parent.get(node.id);
    for (let depth = 0; up && depth < 4; depth++, up = parent.get(up.id)) {
      if (sqliteCaller.test(up.callFrame.url)) return true;
    }
    return false;
  };

  // Node's own functions and native code are charged to the nearest caller from a package or from our code,
  // so a socket write lands on Fastify (a reply) or pg (a query), a file write on pino, hashing on callgate.
  const componentCache = new Map<number, string>();
  const componentOf = (node: ProfileNode): string => {
    const cached = componentCache.get(node.id);
    if (cached) return cached;
    const { functionName, url } = node.callFrame;
    let component: string;
    if (functionName === '(garbage collector)') component = 'V8 garbage collector';
    else if (functionName === '(program)') component = 'V8 and native, unattributed';
    else if (functionName === '(idle)') component = '(idle)';
    else if (functionName === '(root)') component = 'Node core (event loop, timers, microtasks)';
    else if (!url && sqliteNatives.has(functionName) && calledFromSqlite(node)) {
      component = functionName === 'Statement' ? 'SQLite: preparing statements (parse and plan SQL)' : 'SQLite: running statements';
    } else {
      const owner = ownerOf(url);
      const up = parent.get(node.id);
      component = owner ?? (up ? componentOf(up) : 'Node core (event loop, timers, microtasks)');
    }
    componentCache.set(node.id, component);
    return component;
  };

  const selfUs = new Map<number, number>();
  const meanDelta = profile.timeDeltas.reduce((a, b) => a + b, 0) / Math.max(1, profile.timeDeltas.length);
  profile.samples.forEach((id, i) => {
    // A sample stands for the time until the next one.
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? meanDelta));
  });

  const components = new Map<string, number>();
  const functions = new Map<string, number>();
  let idleUs = 0;
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    totalUs += us;
    const component = componentOf(node);
    if (component === '(idle)') {
      idleUs += us;
      continue;
    }
    components.set(component, (components.get(component) ?? 0) + us);
    if (node.callFrame.functionName === '(root)') continue;
    const key = component.startsWith('SQLite:') ? `${describe(node.callFrame)} [SQLite]` : describe(node.callFrame);
    functions.set(key, (functions.get(key) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const ranked = (map: Map<string, number>, limit: number): Share[] =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({ name, share: busyUs > 0 ? us / busyUs : 0 }));
  return {
    busyMs: busyUs / 1000,
    idleShare: totalUs > 0 ? idleUs / totalUs : 0,
    components: ranked(components, top),
    functions: ranked(functions, top),
  };
}
