/**
 * What an account has besides its records: funnels and their stages, agents,
 * channels, campaigns (with their ads) and ideal customer profiles. Built
 * deterministically from the emulator seed and the account's ordinal.
 */
import type { Pools } from './pools.js';
import { Prng } from './prng.js';
import type { PipelineStageRecord, StageOutcome } from './records.js';

export interface Pipeline {
  readonly id: string;
  readonly name: string;
  /** In position order; open stages first, then the won stage, then the lost stage. */
  readonly stages: readonly PipelineStageRecord[];
  readonly open: readonly PipelineStageRecord[];
  readonly won: PipelineStageRecord;
  readonly lost: PipelineStageRecord;
}

export interface Ad {
  readonly adId: string;
  readonly headline: string;
}

export interface Campaign {
  readonly id: string;
  readonly name: string;
  readonly ads: readonly Ad[];
  /** Text of the campaign's click-to-chat link. */
  readonly linkText: string;
}

export interface AccountContext {
  readonly pipelines: readonly Pipeline[];
  readonly stages: readonly PipelineStageRecord[];
  readonly stageById: ReadonlyMap<string, PipelineStageRecord>;
  readonly pipelineById: ReadonlyMap<string, Pipeline>;
  readonly agents: readonly string[];
  readonly channels: readonly string[];
  readonly campaigns: readonly Campaign[];
  readonly campaignById: ReadonlyMap<string, Campaign>;
  readonly icps: readonly string[];
}

const PIPELINES: readonly { name: string; stages: readonly (readonly [string, string, StageOutcome | null])[] }[] = [
  {
    name: 'Sales',
    stages: [
      ['new_lead', 'New lead', null],
      ['contacted', 'Contacted', null],
      ['qualified', 'Qualified', null],
      ['proposal', 'Proposal sent', null],
      ['negotiation', 'Negotiation', null],
      ['won', 'Won', 'won'],
      ['lost', 'Lost', 'lost'],
    ],
  },
  {
    name: 'Partnerships',
    stages: [
      ['new', 'New', null],
      ['intro_call', 'Intro call', null],
      ['evaluation', 'Evaluation', null],
      ['signed', 'Signed', 'won'],
      ['declined', 'Declined', 'lost'],
    ],
  },
];

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const CHANNEL_KINDS = ['Click-to-WhatsApp', 'Instagram', 'Messenger', 'Website chat'];

/** A numeric ad id as ad platforms issue them (18 digits). */
export function adId(prng: Prng): string {
  return `1202${prng.between(1, 9)}${prng.digits(13)}`;
}

export function buildAccountContext(seed: number, ordinal: number, pools: Pools): AccountContext {
  const prng = Prng.derive(seed, 'account-context', ordinal);
  const pipelines: Pipeline[] = PIPELINES.map((p) => {
    const pipelineId = prng.uuid();
    const stages: PipelineStageRecord[] = p.stages.map(([key, name, outcome], position) => ({
      id: prng.uuid(), key, name, pipeline_id: pipelineId, position, outcome,
    }));
    const won = stages.find((s) => s.outcome === 'won');
    const lost = stages.find((s) => s.outcome === 'lost');
    if (won === undefined || lost === undefined) throw new Error('pipeline without won/lost stage');
    return { id: pipelineId, name: p.name, stages, open: stages.filter((s) => s.outcome === null), won, lost };
  });
  const stages = pipelines.flatMap((p) => p.stages);
  const agents = Array.from({ length: 8 }, () => prng.uuid());
  const channels = CHANNEL_KINDS.map(() => prng.uuid());
  const allLocales = pools.locales.map(([l]) => l);
  const campaigns: Campaign[] = Array.from({ length: 12 }, (_, i) => {
    const l = prng.pick(allLocales);
    const product = prng.pick(l.products).text;
    const month = MONTHS[i % 12] as string;
    return {
      id: prng.uuid(),
      name: `${product} - ${month} promo`,
      ads: Array.from({ length: prng.between(1, 4) }, () => ({ adId: adId(prng), headline: prng.pick(l.headlines) })),
      linkText: `${l.linkGreeting} ${product}`,
    };
  });
  const icps = Array.from({ length: 3 }, () => prng.uuid());
  return {
    pipelines,
    stages,
    stageById: new Map(stages.map((s) => [s.id, s])),
    pipelineById: new Map(pipelines.map((p) => [p.id, p])),
    agents,
    channels,
    campaigns,
    campaignById: new Map(campaigns.map((c) => [c.id, c])),
    icps,
  };
}
