/** The replica's public API for scripts (the demo): read a replica back, summarize it. */
export { replicaRecords, replicaStates, readRecords } from './records.js';
export { replicaSummary, summarize, DEFAULT_LOST_CATEGORIES, DEFAULT_WON_CATEGORIES, type ReplicaSummary, type SummaryOptions, type Count, type StageCount } from './summary.js';
export { ReplicaStore } from './store.js';
export { layoutFor, type TableLayout, type ColumnSpec, type ColumnKind } from './layout.js';
