// Response serializers: compiled on a route's first answer with that status, and once per schema for
// the whole process instead of once per app. Fastify's own compiler builds a fast-json-stringify
// function for every route's every status code each time an app is built; the function depends only
// on the schema (the contract's objects, the same in every app), so the same object gets the same
// function, built when it is first needed. A server compiles what it answers, a few milliseconds on a
// route's first answer; a process that builds many apps and answers a few routes (a test file, a CLI
// command) compiles little.
import fastJsonStringify from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify'

type Serialize = (data: unknown) => string

const compiled = new WeakMap<object, Serialize>()

function serializerFor(schema: object): Serialize {
  let serialize = compiled.get(schema)
  if (!serialize) {
    // As Fastify's default compiler calls it (no shared schemas registered with app.addSchema).
    serialize = fastJsonStringify(schema, { schema: {} }) as Serialize
    compiled.set(schema, serialize)
  }
  return serialize
}

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => {
  let serialize: Serialize | undefined
  return (data) => (serialize ??= serializerFor(schema as object))(data)
}
