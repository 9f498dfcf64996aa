// Templates with version history.
import Type, { type Static } from 'typebox'
import { DateTime, ItemRef, ItemRefCollection, Links } from './common.js'

export const TemplateType = Type.Enum(['EVENT', 'SERIES'])
export type TemplateType = Static<typeof TemplateType>
export const TemplateStatus = Type.Enum(['DRAFT', 'PUBLISHED', 'ARCHIVED'])
export type TemplateStatus = Static<typeof TemplateStatus>
export const ChangeAction = Type.Enum(['CREATE', 'UPDATE', 'ROLLBACK'])
export type ChangeAction = Static<typeof ChangeAction>

export const Template = Type.Object({
  id: Type.String(),
  _links: Links,
  type: TemplateType,
  status: TemplateStatus,
  name: Type.String(),
  description: Type.Optional(Type.String()),
  version: Type.Integer({ minimum: 1 }),
  data: Type.Record(Type.String(), Type.Unknown()),
  regions: ItemRefCollection,
  areas: ItemRefCollection,
  pods: ItemRefCollection,
  courts: ItemRefCollection,
  createdBy: ItemRef,
  lastUpdatedBy: ItemRef,
  createdDate: DateTime(),
  updatedDate: DateTime()
})
export type Template = Static<typeof Template>

export const TemplateVersion = Type.Object({
  id: Type.String(),
  _links: Links,
  version: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  status: TemplateStatus,
  data: Type.Record(Type.String(), Type.Unknown()),
  regions: ItemRefCollection,
  areas: ItemRefCollection,
  pods: ItemRefCollection,
  courts: ItemRefCollection,
  changedBy: ItemRef,
  changedDate: DateTime(),
  changeAction: ChangeAction
})
export type TemplateVersion = Static<typeof TemplateVersion>
