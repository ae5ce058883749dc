import { Type, type Static, type TSchema } from '@sinclair/typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * The provider's judgement of an ended call and the results its agent collected, in one shape for every
 * provider: on the call resource (GET /v1/calls/{id}) and in `call.completed`. Defined with the events, where
 * the calls' schemas can reach it (the calls write the events), in a file of its own that imports no other
 * schema (the events' schemas import the batches', which import the calls').
 */
export const CallAnalysis = Type.Object(
  {
    successful: Nullable(
      Type.Boolean({ description: "The provider's own judgement of whether the call succeeded; null when it made none" }),
    ),
    data: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]), {
      description:
        'The structured results the agent collected, keys as the provider names them ({} when none, or once the retention period has passed)',
    }),
  },
  {
    description:
      'Present once the call has ended. A provider that analyses after the end fills it later: the call (GET /v1/calls/{id}) shows it then, with no second event',
  },
);
export type CallAnalysis = Static<typeof CallAnalysis>;
