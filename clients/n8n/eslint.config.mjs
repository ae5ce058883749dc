// n8n's own lint rules for community nodes, as far as they run on Node 20 (npm run lint in clients/n8n; its
// devDependencies are installed in this folder only). @n8n/node-cli's `n8n-node lint` wants Node 22; this
// runs the same two plugins: @n8n/eslint-plugin-community-nodes (its recommended set) and
// eslint-plugin-n8n-nodes-base (its community, credentials and nodes sets).
import communityNodes from '@n8n/eslint-plugin-community-nodes';
import tsParser from '@typescript-eslint/parser';
import n8nNodesBase from 'eslint-plugin-n8n-nodes-base';
import * as jsoncParser from 'jsonc-eslint-parser';

const plugins = { 'n8n-nodes-base': n8nNodesBase };

export default [
  { ignores: ['dist/**', 'node_modules/**', 'test/**', 'scripts/**', 'e2e/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tsParser,
      parserOptions: { sourceType: 'module', project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  { files: ['package.json'], languageOptions: { parser: jsoncParser }, plugins, rules: n8nNodesBase.configs.community.rules },
  { files: ['credentials/**/*.ts'], plugins, rules: n8nNodesBase.configs.credentials.rules },
  { files: ['nodes/**/*.ts'], plugins, rules: n8nNodesBase.configs.nodes.rules },
  { files: ['**/*.ts'], ...communityNodes.configs.recommended },
  {
    // Where the two plugins disagree, the newer one (the one @n8n/node-cli runs) wins: inputs and outputs as
    // NodeConnectionTypes rather than 'main' strings, and a credential documentation URL rather than a
    // camelCase slug (which is for n8n's own nodes).
    files: ['**/*.ts'],
    rules: {
      'n8n-nodes-base/node-class-description-inputs-wrong-regular-node': 'off',
      'n8n-nodes-base/node-class-description-outputs-wrong': 'off',
      'n8n-nodes-base/cred-class-field-documentation-url-miscased': 'off',
    },
  },
];
