/** Public surface of the Data-Read API emulator. */
export { startEmulator, createEmulator, createRequestListener, type Emulator, type EmulatorOptions } from './server.js';
export {
  EmulatorControl, DATA_SCOPE,
  type AccountInput, type AccountInfo, type KeyInput, type KeyPatch, type KeyInfo, type Dump, type FaultsInfo, type EmulatorStats,
} from './control.js';
export { dayOfActivity, type Mutation, type MutationResult, type OutcomeCategory } from './mutations.js';
export type { SeedOptions, SeedResult } from './seed.js';
export { FAULT_KINDS, type FaultKind, type FaultRule } from './faults.js';
export { DEFAULT_LIMITS, type Limits, type LimitOverrides } from './limits.js';
export { buildOpenApiDocument } from './openapi.js';
export type { ExtraField, ExtraFieldType } from './extra-fields.js';
export { Prng } from './prng.js';
export type { ContactRecord, ConversationRecord, StageEventRecord, DeletionRecord, PipelineStageRecord } from './records.js';
export { main } from './cli.js';
