/**
 * Schema-validation failures in words a person can act on: Ajv's first error becomes a sentence and the
 * `param` of the field at fault, as the API names fields (`metadata.note`, `recipients[17].to`).
 */

export interface AjvLikeError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  /** Set by Ajv when the error is about an object's key (propertyNames), not its value. */
  propertyName?: string;
}

/** AJV's "string,number,boolean,null" as people write it: "a string, a number, a boolean or null". */
function typeNames(types: string): string {
  const names = types.split(',').map((type) => (type === 'null' ? 'null' : `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : (names[0] ?? types);
}

/**
 * A field as `param` names it: `metadata.note`, and an array's element by its index, `recipients[17].to`.
 * `data` is the value validated, which says where an index is an array's rather than an object's key.
 */
function fieldPathIn(instancePath: string, child: unknown, data: unknown): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (typeof child === 'string') parts.push(child);
  let path = '';
  let value = data;
  for (const part of parts) {
    path = Array.isArray(value) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`;
    value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  }
  return path;
}

/**
 * Friendlier wording for a pattern failure, by field path; a route declares its own in `config.patternHints`.
 * A field in a list is found with its index left out (`recipients[].to`), and its hint may name the place.
 */
export type PatternHints = Readonly<Record<string, string | ((param: string) => string)>>;

/** Turns the first schema-validation error into a param and a sentence a person can act on. */
export function describeValidationError(
  error: AjvLikeError,
  context: string,
  patternHints: PatternHints = {},
  data?: unknown,
): { param?: string; message: string } {
  const fieldPath = (instancePath: string, child?: unknown) => fieldPathIn(instancePath, child, data);
  const where = context === 'body' ? '' : `${context} `;
  switch (error.keyword) {
    case 'required': {
      const param = fieldPath(error.instancePath, error.params.missingProperty);
      return { param, message: `Missing required field: ${where}${param}.` };
    }
    case 'additionalProperties': {
      const param = fieldPath(error.instancePath, error.params.additionalProperty);
      if (context === 'querystring') return { param, message: `Unknown query parameter: ${param}.` };
      return { param, message: `Unknown field: ${where}${param}.` };
    }
    case 'propertyNames': {
      const param = fieldPath(error.instancePath);
      const name = String(error.params.propertyName ?? '');
      return { param, message: `${param} has an invalid key "${name.slice(0, 80)}": keys are at most 64 characters.` };
    }
    case 'maxLength':
      if (error.propertyName !== undefined) {
        // Reported by propertyNames: the key, not the value, is too long.
        const param = fieldPath(error.instancePath);
        return {
          param,
          message: `${param} keys must be at most ${String(error.params.limit)} characters; "${error.propertyName.slice(0, 80)}" is longer.`,
        };
      }
      break;
    case 'pattern': {
      const param = fieldPath(error.instancePath);
      const hint = patternHints[param] ?? patternHints[param.replace(/\[\d+\]/g, '[]')];
      if (hint) return { param, message: typeof hint === 'string' ? hint : hint(param) };
      break;
    }
    case 'type': {
      const param = fieldPath(error.instancePath);
      if (param === '') return { message: `The request body must be a JSON ${String(error.params.type)}.` };
      // Query values are all text; only a parameter given twice (?limit=1&limit=2) arrives as a list.
      if (context === 'querystring') return { param, message: `${param} must be given once.` };
      return { param, message: `${param} must be ${typeNames(String(error.params.type))}.` };
    }
    case 'enum': {
      const param = fieldPath(error.instancePath);
      const allowed = Array.isArray(error.params.allowedValues) ? error.params.allowedValues.map(String).join(', ') : '';
      return { param, message: `${param} must be one of ${allowed}.` };
    }
    case 'anyOf': {
      const param = fieldPath(error.instancePath);
      return { param, message: `${param} has a value of a type that is not allowed.` };
    }
    case 'minItems':
    case 'maxItems': {
      const param = fieldPath(error.instancePath);
      const bound = error.keyword === 'minItems' ? 'at least' : 'at most';
      return { param, message: `${param} must have ${bound} ${Number(error.params.limit).toLocaleString('en-US')} items.` };
    }
    default:
      break;
  }
  const param = fieldPath(error.instancePath);
  if (param === '') return { message: `The request ${context} ${error.message ?? 'is invalid'}.` };
  return { param, message: `${param} ${error.message ?? 'is invalid'}.` };
}
