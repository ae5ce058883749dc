import type {
  IDataObject,
  IExecuteFunctions,
  ILoadOptionsFunctions,
  INodeExecutionData,
  INodePropertyOptions,
  INodeType,
  INodeTypeDescription,
} from 'n8n-workflow';
import { NodeApiError, NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import { type ApiRequest, callgateJson } from '../../shared/transport';
import { callgateProperties } from './description';
import {
  type BatchOptions,
  collectPages,
  callFilters,
  createBatchRequest,
  createCallRequest,
  getBatchRequest,
  getCallRequest,
  getTranscriptRequest,
  cancelCallRequest,
  type ItemIdentity,
  parseRecipients,
  type RecipientFields,
  recipientsFromFields,
} from './requests';

/** The most agents the agent picker lists (ten pages). */
const AGENT_PAGES = 10;

function identityOf(context: IExecuteFunctions, itemIndex: number): ItemIdentity {
  return {
    instanceId: context.getInstanceId(),
    workflowId: String(context.getWorkflow().id ?? ''),
    executionId: String(context.getExecutionId() ?? ''),
    nodeName: context.getNode().name,
    itemIndex,
  };
}

function rows(body: unknown): IDataObject[] {
  return Array.isArray(body) ? (body as IDataObject[]) : [body as IDataObject];
}

async function runItem(context: IExecuteFunctions, resource: string, operation: string, i: number): Promise<IDataObject[]> {
  const send = (request: ApiRequest) => callgateJson(context, request, i);
  const returnAll = () => context.getNodeParameter('returnAll', i, false) as boolean;
  const limit = () => context.getNodeParameter('limit', i, 50) as number;

  if (resource === 'call') {
    switch (operation) {
      case 'create': {
        const request = createCallRequest(
          {
            agentId: context.getNodeParameter('agentId', i),
            to: context.getNodeParameter('to', i),
            metadata: context.getNodeParameter('metadata', i, ''),
            idempotencyKey: context.getNodeParameter('idempotencyKey', i, ''),
          },
          identityOf(context, i),
        );
        return rows(await send(request));
      }
      case 'get':
        return rows(await send(getCallRequest(context.getNodeParameter('callId', i))));
      case 'getTranscript':
        return rows(await send(getTranscriptRequest(context.getNodeParameter('callId', i))));
      case 'cancel':
        return rows(await send(cancelCallRequest(context.getNodeParameter('callId', i))));
      case 'list': {
        const query = callFilters(context.getNodeParameter('filters', i, {}) as Record<string, unknown>);
        return collectPages(send, { path: '/v1/calls', query, returnAll: returnAll(), limit: limit() }) as Promise<IDataObject[]>;
      }
    }
  }

  if (resource === 'batch') {
    switch (operation) {
      case 'create': {
        const source = context.getNodeParameter('recipientsSource', i, 'json') as string;
        const recipients =
          source === 'fields'
            ? recipientsFromFields(
                ((context.getNodeParameter('recipientFields', i, {}) as { recipient?: RecipientFields[] }).recipient ??
                  []) as RecipientFields[],
              )
            : parseRecipients(context.getNodeParameter('recipients', i));
        const options = context.getNodeParameter('batchOptions', i, {}) as Record<string, unknown>;
        const window = (options.callingWindow as { window?: BatchOptions['callingWindow'] } | undefined)?.window;
        const retry = (options.retry as { rule?: BatchOptions['retry'] } | undefined)?.rule;
        const request = createBatchRequest(
          {
            agentId: context.getNodeParameter('agentId', i),
            recipients,
            options: {
              ...(typeof options.name === 'string' ? { name: options.name } : {}),
              ...(typeof options.scheduledAt === 'string' ? { scheduledAt: options.scheduledAt } : {}),
              ...(typeof options.maxConcurrency === 'number' ? { maxConcurrency: options.maxConcurrency } : {}),
              ...(window ? { callingWindow: window } : {}),
              ...(retry ? { retry } : {}),
            },
            idempotencyKey: context.getNodeParameter('idempotencyKey', i, ''),
          },
          identityOf(context, i),
        );
        return rows(await send(request));
      }
      case 'get':
        return rows(await send(getBatchRequest(context.getNodeParameter('batchId', i))));
      case 'list': {
        const status = context.getNodeParameter('batchStatus', i, '') as string;
        const query: Record<string, string> = status === '' ? {} : { status };
        return collectPages(send, { path: '/v1/batches', query, returnAll: returnAll(), limit: limit() }) as Promise<IDataObject[]>;
      }
    }
  }

  throw new NodeOperationError(context.getNode(), `The operation "${operation}" of "${resource}" is not supported.`, { itemIndex: i });
}

export class Callgate implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Callgate',
    name: 'callgate',
    icon: { light: 'file:callgate.svg', dark: 'file:callgate.dark.svg' },
    group: ['transform'],
    version: 1,
    usableAsTool: true,
    subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
    description: 'Place outbound AI voice-agent calls and batches with callgate, and read their outcomes',
    defaults: {
      name: 'Callgate',
    },
    inputs: [NodeConnectionTypes.Main],
    outputs: [NodeConnectionTypes.Main],
    credentials: [
      {
        name: 'callgateApi',
        required: true,
      },
    ],
    properties: callgateProperties,
  };

  methods = {
    loadOptions: {
      /** The account's agents from GET /v1/agents: the name shown, the id as the value. */
      async getAgents(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
        const agents: Record<string, unknown>[] = [];
        let startingAfter: string | undefined;
        for (let page = 0; page < AGENT_PAGES; page++) {
          const qs: Record<string, string | number> = { limit: 100 };
          if (startingAfter) qs.starting_after = startingAfter;
          const body = (await callgateJson(this, { method: 'GET', path: '/v1/agents', qs })) as {
            data?: Record<string, unknown>[];
            has_more?: boolean;
          };
          const data = Array.isArray(body?.data) ? body.data : [];
          agents.push(...data);
          const last = data.at(-1);
          if (!body?.has_more || !last || typeof last.id !== 'string') break;
          startingAfter = last.id;
        }
        return agents.map((agent) => ({
          name: typeof agent.name === 'string' && agent.name !== '' ? agent.name : String(agent.id),
          value: String(agent.id),
          description: `${String(agent.id)} (${String(agent.provider ?? 'unknown provider')})`,
        }));
      },
    },
  };

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    const items = this.getInputData();
    const output: INodeExecutionData[] = [];
    for (let i = 0; i < items.length; i++) {
      const resource = this.getNodeParameter('resource', i) as string;
      const operation = this.getNodeParameter('operation', i) as string;
      try {
        const results = await runItem(this, resource, operation, i);
        for (const json of results) output.push({ json, pairedItem: { item: i } });
      } catch (error) {
        if (this.continueOnFail()) {
          output.push({ json: { error: error instanceof Error ? error.message : String(error) }, pairedItem: { item: i } });
          continue;
        }
        // callgate's refusals are NodeApiErrors already; a parameter's fault becomes a NodeOperationError of its item.
        const nodeError =
          error instanceof NodeOperationError || error instanceof NodeApiError
            ? error
            : new NodeOperationError(this.getNode(), error instanceof Error ? error : String(error), { itemIndex: i });
        throw nodeError;
      }
    }
    return [output];
  }
}
