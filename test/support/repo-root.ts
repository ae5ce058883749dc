import { fileURLToPath } from 'node:url';

/** The repository's root folder, for tests that read its files or start its entries. */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
