// Request validation with two Ajv instances: query strings, params and headers arrive as text and
// are coerced to the schema's types; JSON bodies are taken as sent, so `"2"` is not a number there.
// Neither strips unknown properties: a schema that forbids them refuses them with a 400.
import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import type { Static, TSchema } from 'typebox'
import { BadRequestError } from '../errors.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

const common: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false }

function createAjv(options: Options): Ajv {
  const ajv = new Ajv({ ...common, ...options })
  addFormats(ajv)
  return ajv
}

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const coercing = createAjv({ coerceTypes: 'array' })
  const strict = createAjv({ coerceTypes: false })
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : coercing
    return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>
  }
}

/** "body.cameras.0.feed must match pattern …": one line naming each failing field. */
export function describeValidationErrors(errors: Array<Partial<ErrorObject>>, context: string): string {
  return errors
    .map((e) => {
      const path = [context, ...(e.instancePath ?? '').split('/').filter(Boolean)].join('.')
      const params = (e.params ?? {}) as Record<string, unknown>
      if (e.keyword === 'required') return `${path}.${String(params.missingProperty)} is required`
      if (e.keyword === 'additionalProperties') return `${path}.${String(params.additionalProperty)} is not allowed`
      if (e.keyword === 'enum' && Array.isArray(params.allowedValues)) {
        return `${path} must be one of ${params.allowedValues.join(', ')}`
      }
      return `${path} ${e.message ?? 'is not valid'}`
    })
    .join('; ')
}

/**
 * Checks a value that arrives outside a request body (a file given to the CLI) by the same rules as a
 * body: no coercion, defaults filled in, a BadRequestError naming the field under `context`.
 */
let valuesAjv: Ajv | undefined

export function valueValidator<T extends TSchema>(schema: T, context: string): (value: unknown) => Static<T> {
  valuesAjv ??= createAjv({ coerceTypes: false })
  const check = valuesAjv.compile(schema as object)
  return (value) => {
    if (!check(value)) throw new BadRequestError(describeValidationErrors(check.errors ?? [], context))
    return value as Static<T>
  }
}
