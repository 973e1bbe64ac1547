/** The pipeline stages' fields as the emulator describes them, in the neutral schema form a merged schema declares them. */
export const EMULATOR_STAGE_PROPERTIES = {
  id: { type: 'string', description: 'Identifier of the funnel stage' },
  key: { type: 'string', description: 'Key of the stage, unique within its funnel' },
  name: { type: 'string', description: 'Display name of the stage' },
  pipeline_id: { type: 'string', description: 'Funnel of the stage' },
  position: { type: 'integer', description: 'Position of the stage in its funnel, from 0' },
  outcome: { type: ['null', 'string'], description: 'won or lost for a closing stage; null for an open stage', enum: ['won', 'lost', null] },
} as const;
