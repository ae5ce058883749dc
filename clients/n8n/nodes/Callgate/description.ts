import type { INodeProperties } from 'n8n-workflow';

const callOps = { resource: ['call'] };
const batchOps = { resource: ['batch'] };

export const callgateProperties: INodeProperties[] = [
  {
    displayName: 'Resource',
    name: 'resource',
    type: 'options',
    noDataExpression: true,
    options: [
      { name: 'Batch', value: 'batch' },
      { name: 'Call', value: 'call' },
    ],
    default: 'call',
  },
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: callOps },
    options: [
      {
        name: 'Cancel',
        value: 'cancel',
        description: 'End a call: cancelled while it rings, hung up once answered (not on ElevenLabs)',
        action: 'Cancel a call',
      },
      { name: 'Create', value: 'create', description: 'Place a call with a voice agent', action: 'Create a call' },
      { name: 'Get', value: 'get', description: 'Get a call with its status and outcome', action: 'Get a call' },
      { name: 'Get Many', value: 'list', description: 'List calls, newest first, with filters', action: 'Get many calls' },
      {
        name: 'Get Transcript',
        value: 'getTranscript',
        description: 'Get what was said on an ended call',
        action: 'Get the transcript of a call',
      },
    ],
    default: 'create',
  },
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: batchOps },
    options: [
      { name: 'Create', value: 'create', description: 'Place many calls from one request', action: 'Create a batch' },
      { name: 'Get', value: 'get', description: 'Get a batch with its counts', action: 'Get a batch' },
      { name: 'Get Many', value: 'list', description: 'List batches, newest first', action: 'Get many batches' },
    ],
    default: 'create',
  },

  // Call → Create and Batch → Create
  {
    displayName: 'Agent Name or ID',
    name: 'agentId',
    type: 'options',
    typeOptions: { loadOptionsMethod: 'getAgents' },
    required: true,
    default: '',
    displayOptions: { show: { resource: ['call', 'batch'], operation: ['create'] } },
    description:
      'The voice agent that places the call. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
  },
  {
    displayName: 'To',
    name: 'to',
    type: 'string',
    required: true,
    default: '',
    placeholder: '+14155550123',
    displayOptions: { show: { resource: ['call'], operation: ['create'] } },
    description: 'The number to call, in E.164 form (+ and the country code)',
  },
  {
    displayName: 'Metadata',
    name: 'metadata',
    type: 'json',
    default: '{}',
    displayOptions: { show: { resource: ['call'], operation: ['create'] } },
    description:
      'A JSON object passed to the agent as its dynamic variables, e.g. {"customer_name": "Ada"}: keys up to 64 characters, values string, number, boolean or null, 5 KB at most',
  },

  // Batch → Create
  {
    displayName: 'Recipients Source',
    name: 'recipientsSource',
    type: 'options',
    options: [
      { name: 'JSON', value: 'json', description: 'A JSON array of recipients, which may be built with an expression' },
      { name: 'Fields', value: 'fields', description: 'Enter each recipient below' },
    ],
    default: 'json',
    displayOptions: { show: { resource: ['batch'], operation: ['create'] } },
  },
  {
    displayName: 'Recipients',
    name: 'recipients',
    type: 'json',
    required: true,
    default: '[{"to": "+14155550123", "reference": "appt-1", "metadata": {"customer_name": "Ada"}}]',
    displayOptions: { show: { resource: ['batch'], operation: ['create'], recipientsSource: ['json'] } },
    description:
      'From 1 to 10,000 objects {"to", "reference"?, "metadata"?}, each number at most once. An expression may build it from all input items.',
  },
  {
    displayName: 'Recipients',
    name: 'recipientFields',
    type: 'fixedCollection',
    typeOptions: { multipleValues: true },
    placeholder: 'Add Recipient',
    default: {},
    displayOptions: { show: { resource: ['batch'], operation: ['create'], recipientsSource: ['fields'] } },
    options: [
      {
        displayName: 'Recipient',
        name: 'recipient',
        values: [
          {
            displayName: 'To',
            name: 'to',
            type: 'string',
            default: '',
            placeholder: '+14155550123',
            description: 'The number, in E.164 form',
          },
          {
            displayName: 'Reference',
            name: 'reference',
            type: 'string',
            default: '',
            description: 'Your own ID for this recipient (1 to 255 characters)',
          },
          {
            displayName: 'Metadata',
            name: 'metadata',
            type: 'json',
            default: '{}',
            description: 'A JSON object of dynamic variables for the agent',
          },
        ],
      },
    ],
  },
  {
    displayName: 'Options',
    name: 'batchOptions',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: { show: { resource: ['batch'], operation: ['create'] } },
    options: [
      {
        displayName: 'Calling Window',
        name: 'callingWindow',
        type: 'fixedCollection',
        default: {},
        description: 'Dial only within these local hours and days',
        options: [
          {
            displayName: 'Window',
            name: 'window',
            values: [
              {
                displayName: 'Days',
                name: 'days',
                type: 'multiOptions',
                options: [
                  { name: 'Friday', value: 'fri' },
                  { name: 'Monday', value: 'mon' },
                  { name: 'Saturday', value: 'sat' },
                  { name: 'Sunday', value: 'sun' },
                  { name: 'Thursday', value: 'thu' },
                  { name: 'Tuesday', value: 'tue' },
                  { name: 'Wednesday', value: 'wed' },
                ],
                default: [],
                description: 'Days on which to dial (none chosen: every day)',
              },
              {
                displayName: 'End',
                name: 'end',
                type: 'string',
                default: '21:00',
                placeholder: '21:00',
                description: 'Local time HH:MM, after Start',
              },
              {
                displayName: 'Fallback Time Zone',
                name: 'fallbackTimeZone',
                type: 'string',
                default: '',
                placeholder: 'America/New_York',
                description: 'With Time Zone "recipient": the zone of a number whose zone is unknown (required then)',
              },
              {
                displayName: 'Start',
                name: 'start',
                type: 'string',
                default: '08:00',
                placeholder: '08:00',
                description: 'Local time HH:MM',
              },
              {
                displayName: 'Time Zone',
                name: 'timeZone',
                type: 'string',
                default: 'recipient',
                placeholder: 'Europe/Paris',
                description: 'An IANA time zone, or "recipient" for the zone of each number',
              },
            ],
          },
        ],
      },
      {
        displayName: 'Max Concurrency',
        name: 'maxConcurrency',
        type: 'number',
        typeOptions: { minValue: 1, maxValue: 1000 },
        default: 5,
        description: 'The most calls of this batch in progress at once',
      },
      { displayName: 'Name', name: 'name', type: 'string', default: '', description: 'A name for the batch (1 to 200 characters)' },
      {
        displayName: 'Retry',
        name: 'retry',
        type: 'fixedCollection',
        default: {},
        description: 'Dial a recipient again after some failures',
        options: [
          {
            displayName: 'Rule',
            name: 'rule',
            values: [
              {
                displayName: 'Delay Minutes',
                name: 'delayMinutes',
                type: 'number',
                typeOptions: { minValue: 1, maxValue: 1440 },
                default: 30,
              },
              {
                displayName: 'Max Attempts',
                name: 'maxAttempts',
                type: 'number',
                typeOptions: { minValue: 1, maxValue: 5 },
                default: 3,
                description: 'Dials in all, the first included',
              },
              {
                displayName: 'On',
                name: 'on',
                type: 'multiOptions',
                options: [
                  { name: 'Busy', value: 'busy' },
                  { name: 'No Answer', value: 'no_answer' },
                  { name: 'Voicemail', value: 'voicemail' },
                ],
                default: ['busy', 'no_answer'],
                description: 'The failures that are retried',
              },
            ],
          },
        ],
      },
      {
        displayName: 'Scheduled At',
        name: 'scheduledAt',
        type: 'dateTime',
        default: '',
        description:
          "When to start dialing (at most 30 days ahead; default now). A time without a zone is read in the n8n server's time zone.",
      },
    ],
  },

  // Both creates
  {
    displayName: 'Idempotency Key',
    name: 'idempotencyKey',
    type: 'string',
    default: '',
    displayOptions: { show: { resource: ['call', 'batch'], operation: ['create'] } },
    description:
      'Empty: a key is made for each item from the execution, this node and the item, so "Retry On Fail" never calls twice. Map your own (e.g. an order ID) so that a new execution of the same item, after "Retry execution", is not called twice either: callgate answers the first call for 24 hours.',
  },

  // Call → Get, Get Transcript
  {
    displayName: 'Call ID',
    name: 'callId',
    type: 'string',
    required: true,
    default: '',
    placeholder: 'call_conv_…',
    displayOptions: { show: { resource: ['call'], operation: ['get', 'getTranscript', 'cancel'] } },
  },

  // Batch → Get
  {
    displayName: 'Batch ID',
    name: 'batchId',
    type: 'string',
    required: true,
    default: '',
    placeholder: 'batch_…',
    displayOptions: { show: { resource: ['batch'], operation: ['get'] } },
  },

  // Get Many
  {
    displayName: 'Return All',
    name: 'returnAll',
    type: 'boolean',
    default: false,
    displayOptions: { show: { resource: ['call', 'batch'], operation: ['list'] } },
    description: 'Whether to return all results or only up to a given limit',
  },
  {
    displayName: 'Limit',
    name: 'limit',
    type: 'number',
    typeOptions: { minValue: 1 },
    default: 50,
    displayOptions: { show: { resource: ['call', 'batch'], operation: ['list'], returnAll: [false] } },
    description: 'Max number of results to return',
  },
  {
    displayName: 'Filters',
    name: 'filters',
    type: 'collection',
    placeholder: 'Add Filter',
    default: {},
    displayOptions: { show: { resource: ['call'], operation: ['list'] } },
    options: [
      { displayName: 'Agent ID', name: 'agentId', type: 'string', default: '', description: 'Calls placed with this agent' },
      { displayName: 'Batch ID', name: 'batchId', type: 'string', default: '', description: 'Calls a batch placed' },
      {
        displayName: 'Created After',
        name: 'createdAfter',
        type: 'string',
        default: '',
        placeholder: '2026-11-24T09:00:00Z',
        description: 'ISO 8601 with its zone (exclusive)',
      },
      {
        displayName: 'Created Before',
        name: 'createdBefore',
        type: 'string',
        default: '',
        placeholder: '2026-11-24T10:00:00Z',
        description: 'ISO 8601 with its zone (exclusive)',
      },
      {
        displayName: 'Reference',
        name: 'reference',
        type: 'string',
        default: '',
        description: 'Calls placed for a batch recipient with this reference',
      },
      {
        displayName: 'Status',
        name: 'status',
        type: 'options',
        options: [
          { name: 'Completed', value: 'completed' },
          { name: 'Failed', value: 'failed' },
          { name: 'Initiated', value: 'initiated' },
        ],
        default: 'completed',
      },
      {
        displayName: 'To',
        name: 'to',
        type: 'string',
        default: '',
        placeholder: '+14155550123',
        description: 'Calls placed to exactly this number (E.164)',
      },
    ],
  },
  {
    displayName: 'Status',
    name: 'batchStatus',
    type: 'options',
    options: [
      { name: 'Any', value: '' },
      { name: 'Cancelled', value: 'cancelled' },
      { name: 'Completed', value: 'completed' },
      { name: 'Paused', value: 'paused' },
      { name: 'Running', value: 'running' },
      { name: 'Scheduled', value: 'scheduled' },
    ],
    default: '',
    displayOptions: { show: { resource: ['batch'], operation: ['list'] } },
  },
];
