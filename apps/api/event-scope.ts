import { categoryOf, type RecordedEvent } from '../../infra/event-store/port.ts';
import { inboundAppOf } from '../services/topology.ts';

/**
 * The part of an event a key holder may read: events of the key's apps only. Returns the event's
 * data as shown to this caller, or undefined when the event is about none of its apps. A send
 * batch shows only the messages to the caller's apps (a batch is one user's, but a key may cover
 * only some of that user's apps).
 */
export const scopeEvent = (event: RecordedEvent, appIds: ReadonlySet<string>): { data: unknown } | undefined => {
  const data = event.data as Record<string, unknown>;
  const any = (ids: unknown) => Array.isArray(ids) && ids.some((id) => appIds.has(id as string));
  switch (categoryOf(event.streamName)) {
    case 'app':
      return appIds.has(event.streamName.slice('app-'.length)) ? { data } : undefined;
    case 'outbound':
    case 'inbound':
    case 'group':
      return appIds.has(data.appId as string) ? { data } : undefined;
    case 'credential':
      return any(data.appIds) ? { data } : undefined;
    case 'shred': {
      const keys = (data.keys as Array<{ appId: string }>).filter((key) => appIds.has(key.appId));
      return keys.length > 0 ? { data: { ...data, keys } } : undefined;
    }
    case 'sendbatch': {
      const messages = (data.messages as Array<{ appId: string }>).filter((message) => appIds.has(message.appId));
      return messages.length > 0 ? { data: { ...data, messages } } : undefined;
    }
    case 'popcursor': {
      const appId = inboundAppOf(event.streamName.slice('popcursor-'.length));
      return appId !== undefined && appIds.has(appId) ? { data } : undefined;
    }
    default:
      return undefined; // user events and anything without an app
  }
};
