// What the migrations need to know of the database they run on. One set of migrations serves both
// SQLite and PostgreSQL; the few statements that differ (triggers, the search index, partial
// rebuilds) branch on isPostgres inside the migration.
import { DataTypeNode, OperationNodeTransformer, PostgresAdapter, type Kysely, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from 'kysely'

export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}

/**
 * SQLite's integer holds 64 bits; PostgreSQL's holds 32. Counts, money in minor units and
 * milliseconds all fit SQLite's, so every `integer` column a migration declares is a bigint on
 * PostgreSQL (read back as a number: see numberTypes in ../postgres.ts); `real` is likewise 8 bytes.
 */
class IntegerAsBigint extends OperationNodeTransformer {
  protected override transformDataType(node: DataTypeNode): DataTypeNode {
    if (node.dataType === 'integer') return DataTypeNode.create('bigint')
    // SQLite's real is 8 bytes; PostgreSQL's is 4.
    if (node.dataType === 'real') return DataTypeNode.create('double precision')
    return node
  }
}

export class PostgresTypes implements KyselyPlugin {
  readonly #transformer = new IntegerAsBigint()
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node)
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result
  }
}
