// Request validation with two Ajv instances: query strings, params and headers arrive as text and
// are coerced to the schema's types; JSON bodies are taken as sent, so `"2"` is not a number there.
// Neither strips unknown properties: a schema that forbids them refuses them with a 400.
import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import type { Static, TSchema } from 'typebox'
import { BadRequestError, quote } from '../errors.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

const common: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false }

function createAjv(options: Options): Ajv {
  const ajv = new Ajv({ ...common, ...options })
  addFormats(ajv)
  return ajv
}

/**
 * One pair for the whole process, not one per app: Ajv keeps what it compiled by schema object, and
 * the contract's schemas are the same objects in every app, so an app built after the first (the test
 * suite builds ~200 in some 70 processes) compiles nothing again. Both are configured once and never
 * changed, so sharing them shares nothing else.
 */
let ajvs: { coercing: Ajv; strict: Ajv } | undefined
const sharedAjvs = () => (ajvs ??= { coercing: createAjv({ coerceTypes: 'array' }), strict: createAjv({ coerceTypes: false }) })

type Check = (data: unknown) => true | { error: Array<Partial<ErrorObject>> }

function compileCheck(schema: object, httpPart: string | undefined): Check {
  const { coercing, strict } = sharedAjvs()
  if (httpPart !== 'body') {
    const validate = coercing.compile(schema)
    return (data) => (validate(data) ? true : { error: validate.errors ?? [] })
  }
  const validate = strict.compile(schema)
  // Every valid body passes the text check too, so no route can store what it refuses. After the
  // schema: a field's own rule (a pattern) says more than the general one.
  return (data) => {
    if (!validate(data)) return { error: validate.errors ?? [] }
    const fault = findTextFault(data)
    if (fault) return { error: [{ keyword: 'text', instancePath: fault.path, message: fault.message, params: {} }] }
    return true
  }
}

/**
 * Each route's validator is compiled on the route's first request, not when the app starts: an app
 * has some 200 routes and a process serves a few of them before it is replaced (every test file, every
 * CLI command), and compiling them all was a second of CPU each time. The first request of a route
 * in a server's life pays a few milliseconds once.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => {
    let check: Check | undefined
    return ((data: unknown) => (check ??= compileCheck(schema as object, httpPart))(data)) as ReturnType<FastifySchemaCompiler<unknown>>
  }
}

/**
 * Characters no stored string may hold: C0 controls except tab, line feed and carriage return,
 * DEL and the C1 controls. They break terminals, log lines, CSV exports and C-string consumers, and
 * no name or description needs them. Tab and line breaks stay allowed in every value: the check
 * walks the body without its schema, so it cannot tell a one-line name from a multi-line
 * description, and a newline is harmless to keep where an escape sequence is not.
 */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/

const codePoint = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`

function stringFault(text: string): string | undefined {
  const control = CONTROL.exec(text)
  if (control) return `contains the control character ${codePoint(control[0])} at position ${control.index}: only tab, line feed and carriage return are allowed`
  if (!(text as unknown as { isWellFormed(): boolean }).isWellFormed()) return 'is not well-formed Unicode (it holds a lone surrogate)'
  return undefined
}

/**
 * The first string (or object key) in a parsed body that cannot be stored, with its JSON pointer.
 * Iterative: a body may nest far deeper than the call stack (the schemas refuse that depth later).
 */
export function findTextFault(body: unknown): { path: string; message: string } | undefined {
  const pending: Array<[unknown, string]> = [[body, '']]
  while (pending.length > 0) {
    const [value, path] = pending.pop()!
    if (typeof value === 'string') {
      const message = stringFault(value)
      if (message) return { path, message }
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${path}/${i}`])
    } else if (typeof value === 'object' && value !== null) {
      const keys = Object.keys(value)
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        const keyFault = stringFault(key)
        // The key itself cannot be stored: name its parent and say it is a key.
        if (keyFault) return { path, message: `has a key that ${keyFault}` }
        pending.push([(value as Record<string, unknown>)[key], `${path}/${key}`])
      }
    }
  }
  return undefined
}
/** "body.cameras.0.feed must match pattern …": one line naming each failing field. */
export function describeValidationErrors(errors: Array<Partial<ErrorObject>>, context: string): string {
  return errors
    .map((e) => {
      // Keys come from the sender: a 100 KB key is named by its prefix, like any echoed input.
      const path = [context, ...(e.instancePath ?? '').split('/').filter(Boolean).map((key) => quote(key))].join('.')
      const params = (e.params ?? {}) as Record<string, unknown>
      if (e.keyword === 'required') return `${path}.${String(params.missingProperty)} is required`
      if (e.keyword === 'additionalProperties') return `${path}.${quote(params.additionalProperty)} is not allowed`
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
export function valueValidator<T extends TSchema>(schema: T, context: string): (value: unknown) => Static<T> {
  const check = sharedAjvs().strict.compile(schema as object)
  return (value) => {
    const fault = findTextFault(value)
    if (fault) throw new BadRequestError(describeValidationErrors([{ instancePath: fault.path, message: fault.message }], context))
    if (!check(value)) throw new BadRequestError(describeValidationErrors(check.errors ?? [], context))
    return value as Static<T>
  }
}
