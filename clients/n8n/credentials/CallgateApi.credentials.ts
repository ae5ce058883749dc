import type { IAuthenticateGeneric, ICredentialTestRequest, ICredentialType, INodeProperties } from 'n8n-workflow';

export class CallgateApi implements ICredentialType {
  name = 'callgateApi';

  displayName = 'Callgate API';

  icon = 'file:callgate.svg' as const;

  documentationUrl = 'https://www.npmjs.com/package/n8n-nodes-callgate';

  properties: INodeProperties[] = [
    {
      displayName: 'Base URL',
      name: 'baseUrl',
      type: 'string',
      default: 'http://127.0.0.1:3000',
      required: true,
      placeholder: 'https://callgate.example.com',
      description: 'The address of your callgate server, without /v1',
    },
    {
      displayName: 'API Key',
      name: 'apiKey',
      type: 'string',
      typeOptions: { password: true },
      default: '',
      required: true,
      placeholder: 'cg_test_…',
      description:
        'A callgate API key. A test key (cg_test_…) places simulated calls only and its trigger receives only test events; a live key (cg_live_…) places real calls.',
    },
  ];

  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: {
      headers: {
        Authorization: '=Bearer {{$credentials.apiKey}}',
      },
    },
  };

  test: ICredentialTestRequest = {
    request: {
      baseURL: '={{$credentials.baseUrl}}',
      url: '/v1/agents',
      qs: { limit: 1 },
    },
  };
}
