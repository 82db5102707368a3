import { categoryOf } from '../../infra/event-store/port.ts';
import { inboundAppOf } from '../services/topology.ts';

/**
 * The tags of an event: which apps it concerns (`app:<appId>`). The event store keeps them as an
 * index beside the history, so that a key holder's event stream reads only its apps' events from
 * the store instead of everyone's. Pure: derived from the event alone. Change TAGS_VERSION when
 * the rules change: every store then derives the tags of its whole history again.
 */
export const TAGS_VERSION = '2';

export const appTag = (appId: string) => `app:${appId}`;

const strings = (values: unknown): string[] => (Array.isArray(values) ? values.filter((v): v is string => typeof v === 'string') : []);

export const tagsOf = (event: { readonly streamName: string; readonly type: string; readonly data: unknown }): readonly string[] => {
  const data = (event.data ?? {}) as Record<string, unknown>;
  switch (categoryOf(event.streamName)) {
    case 'app':
      return [appTag(event.streamName.slice('app-'.length))];
    case 'outbound':
    case 'inbound':
    // Groups (issue 14) came after TAGS_VERSION 2 with no history before them: no retagging needed.
    case 'group':
      return typeof data.appId === 'string' ? [appTag(data.appId)] : [];
    case 'shred': {
      const keys = Array.isArray(data.keys) ? (data.keys as Array<{ appId?: unknown }>) : [];
      return [...new Set(strings(keys.map((k) => k.appId)))].map(appTag);
    }
    case 'credential':
      return strings(data.appIds).map(appTag);
    case 'sendbatch': {
      const messages = Array.isArray(data.messages) ? (data.messages as Array<{ appId?: unknown }>) : [];
      return [...new Set(strings(messages.map((m) => m.appId)))].map(appTag);
    }
    case 'popcursor': {
      // Kafka's pop claims: `popcursor-inbound.<appId>`.
      const appId = inboundAppOf(event.streamName.slice('popcursor-'.length));
      return appId !== undefined ? [appTag(appId)] : [];
    }
    default:
      return []; // users and their sessions concern no app
  }
};
