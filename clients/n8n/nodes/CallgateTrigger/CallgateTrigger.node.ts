import { randomUUID } from 'node:crypto';
import type { IDataObject, IHookFunctions, INodeType, INodeTypeDescription, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';
import { verifySignature } from '../../shared/signature';
import { type ApiAnswer, callgateRequest, describeRefusal, isSuccess, refusalError } from '../../shared/transport';
import {
  chosenEvents,
  createdEndpoint,
  createEndpointRequest,
  deleteEndpointRequest,
  EVENT_TYPES,
  endpointDescription,
  endpointServes,
  endpointsOfUrlRequest,
  getEndpointRequest,
  type StoredEndpoint,
} from './endpoints';

function webhookUrl(context: IHookFunctions): string {
  const url = context.getNodeWebhookUrl('default');
  if (!url) throw new NodeOperationError(context.getNode(), 'n8n gave no webhook URL for this trigger.');
  return url;
}

function stored(context: IHookFunctions | IWebhookFunctions): StoredEndpoint & IDataObject {
  return context.getWorkflowStaticData('node') as StoredEndpoint & IDataObject;
}

function forget(data: StoredEndpoint & IDataObject): void {
  delete data.webhookId;
  delete data.webhookSecret;
  delete data.webhookUrl;
}

/** Deletes an endpoint; gone already (404) counts as deleted. */
async function deleteEndpoint(context: IHookFunctions, id: string): Promise<ApiAnswer> {
  return callgateRequest(context, deleteEndpointRequest(id));
}

/** The endpoints callgate has for exactly this URL (ones a lost deactivation or a test run left behind). */
async function endpointsOfUrl(context: IHookFunctions, url: string): Promise<string[]> {
  const answer = await callgateRequest(context, endpointsOfUrlRequest(url));
  if (!isSuccess(answer)) throw refusalError(context, answer);
  const data = (answer.body as { data?: { id?: unknown }[] } | null)?.data ?? [];
  return data.map((endpoint) => endpoint.id).filter((id): id is string => typeof id === 'string');
}

/** A refusal of the endpoint creation, with what to do about the usual one (a URL callgate may not deliver to). */
function creationError(context: IHookFunctions, answer: ApiAnswer, url: string): Error {
  const param = (answer.body as { param?: unknown } | null)?.param;
  if (answer.statusCode === 400 && param === 'url') {
    return new NodeOperationError(context.getNode(), `${describeRefusal(answer)}`, {
      description: `callgate refused n8n's webhook URL ${url}. It delivers only to public https URLs: set n8n's WEBHOOK_URL to a public https address (a tunnel, for instance), or, on a callgate for local development only, start callgate with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true.`,
    });
  }
  return refusalError(context, answer);
}

export class CallgateTrigger implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Callgate Trigger',
    name: 'callgateTrigger',
    icon: { light: 'file:callgate.svg', dark: 'file:callgate.dark.svg' },
    group: ['trigger'],
    version: 1,
    subtitle: '={{$parameter["events"].join(", ")}}',
    description: "Starts the workflow when callgate reports a call's or a batch's outcome (signed webhooks)",
    defaults: {
      name: 'Callgate Trigger',
    },
    inputs: [],
    outputs: [NodeConnectionTypes.Main],
    credentials: [
      {
        name: 'callgateApi',
        required: true,
      },
    ],
    webhooks: [
      {
        name: 'default',
        httpMethod: 'POST',
        responseMode: 'onReceived',
        path: 'webhook',
      },
    ],
    properties: [
      {
        displayName:
          'A test key (cg_test_…) receives only the events of simulated test-mode calls; a live key only live ones. callgate must be able to reach n8n: a public https URL, or a callgate started with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true for local development.',
        name: 'notice',
        type: 'notice',
        default: '',
      },
      {
        displayName: 'Events',
        name: 'events',
        type: 'multiOptions',
        required: true,
        options: [
          { name: 'Batch Completed', value: 'batch.completed', description: 'Every recipient of a batch has ended' },
          { name: 'Call Completed', value: 'call.completed', description: 'A call was answered and ended, with its summary and analysis' },
          { name: 'Call Failed', value: 'call.failed', description: 'A call ended without a conversation (busy, no answer, voicemail, …)' },
        ],
        default: ['call.completed'],
        description: 'The events that start the workflow',
      },
    ],
  };

  webhookMethods = {
    default: {
      /** The stored endpoint still exists and serves this URL and these events; a stale one is deleted. */
      async checkExists(this: IHookFunctions): Promise<boolean> {
        const data = stored(this);
        if (!data.webhookId) return false;
        const answer = await callgateRequest(this, getEndpointRequest(data.webhookId));
        if (answer.statusCode === 404) {
          forget(data);
          return false;
        }
        if (!isSuccess(answer)) throw refusalError(this, answer);
        const serves =
          typeof data.webhookSecret === 'string' &&
          endpointServes(answer.body as Record<string, unknown>, webhookUrl(this), chosenEvents(this.getNodeParameter('events')));
        if (serves) return true;
        const removed = await deleteEndpoint(this, data.webhookId);
        if (!isSuccess(removed) && removed.statusCode !== 404) throw refusalError(this, removed);
        forget(data);
        return false;
      },

      /** Creates the endpoint for n8n's URL (production or test) and keeps its id and secret. */
      async create(this: IHookFunctions): Promise<boolean> {
        const url = webhookUrl(this);
        const events = chosenEvents(this.getNodeParameter('events'));
        const data = stored(this);
        // Endpoints of this very URL are this trigger's own, left by a deactivation that never reached
        // callgate: their secrets are lost, so they could only fail. They count towards the 50.
        for (const id of await endpointsOfUrl(this, url)) await deleteEndpoint(this, id);
        const description = endpointDescription(this.getWorkflow().name, this.getNode().name);
        // A new key for each switch-on; the retry below, after a lost answer or a 5xx, reuses it and gets the
        // same endpoint back instead of a second one.
        const request = createEndpointRequest(url, events, description, `n8n-${randomUUID()}`);
        let answer: ApiAnswer;
        try {
          answer = await callgateRequest(this, request);
        } catch {
          answer = await callgateRequest(this, request);
        }
        if (answer.statusCode >= 500) answer = await callgateRequest(this, request);
        if (!isSuccess(answer)) throw creationError(this, answer, url);
        const { id, secret } = createdEndpoint(answer.body);
        data.webhookId = id;
        data.webhookSecret = secret;
        data.webhookUrl = url;
        return true;
      },

      /** Deletes the endpoint (gone already is fine) and forgets it. */
      async delete(this: IHookFunctions): Promise<boolean> {
        const data = stored(this);
        let ids: string[];
        if (data.webhookId) ids = [data.webhookId];
        else {
          // No stored id (n8n kept no static data, as for some test runs): find it by its URL.
          const url = this.getNodeWebhookUrl('default');
          ids = url ? await endpointsOfUrl(this, url) : [];
        }
        for (const id of ids) {
          const answer = await deleteEndpoint(this, id);
          if (!isSuccess(answer) && answer.statusCode !== 404) return false;
        }
        forget(data);
        return true;
      },
    },
  };

  async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
    const req = this.getRequestObject();
    const res = this.getResponseObject();
    const refuse = (reason: string): IWebhookResponseData => {
      this.logger.warn(`Callgate Trigger refused a delivery: ${reason}`);
      res.status(401).json({ error: 'invalid_signature', message: reason });
      return { noWebhookResponse: true };
    };

    const secret = stored(this).webhookSecret;
    if (typeof secret !== 'string' || secret === '') {
      return refuse('This trigger has no signing secret: deactivate and activate the workflow again.');
    }
    // The bytes as received: n8n keeps them on rawBody (read on demand with readRawBody). A body parsed and
    // serialised again would not verify, so without the bytes the delivery is refused.
    if (!req.rawBody && typeof req.readRawBody === 'function') await req.readRawBody();
    const rawBody: unknown = req.rawBody ?? (typeof req.body === 'string' || Buffer.isBuffer(req.body) ? req.body : undefined);
    if (!Buffer.isBuffer(rawBody) && typeof rawBody !== 'string') return refuse('The raw body of the request is not available.');

    const result = verifySignature({ rawBody, headers: req.headers, secret });
    if (!result.ok) return refuse(result.reason);

    const events = chosenEvents(this.getNodeParameter('events'));
    const type = result.event.type;
    // A type this trigger does not want (webhook.test, or one added to the endpoint elsewhere): taken, not run.
    if (typeof type !== 'string' || !EVENT_TYPES.includes(type as never) || !events.includes(type as never)) {
      return { webhookResponse: { received: true, ignored: type } };
    }
    return { workflowData: [[{ json: result.event as IDataObject }]] };
  }
}
