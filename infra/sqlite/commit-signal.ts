import path from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';

/**
 * Tells the other threads of this process that a SQLite file has a new commit, so that their
 * subscribers and consumers look at once instead of at their next poll (`data_version` and the
 * head position only say it within the poll interval). Other processes still find commits by
 * polling. A `:memory:` database has no other connection: the signal does nothing.
 */
export interface CommitSignal {
  /**
   * Says "committed" to the other threads' signals on the same file (never to this one), with what
   * the commit was about if the caller says (the event store: the categories it appended).
   */
  notify(about?: readonly string[]): void;
  close(): void;
}

/** `onOtherThreadCommit` is told what another thread's commit was about, or undefined when it did not say. */
export const openCommitSignal = (file: string, onOtherThreadCommit: (about: readonly string[] | undefined) => void): CommitSignal => {
  if (file === ':memory:') return { notify: () => undefined, close: () => undefined };
  const channel = new BroadcastChannel(`relay-sqlite-commit:${path.resolve(file)}`);
  channel.onmessage = (message) => {
    const data = (message as MessageEvent).data as unknown;
    onOtherThreadCommit(Array.isArray(data) ? (data as string[]) : undefined);
  };
  // The channel alone does not keep a thread alive.
  channel.unref();
  let open = true;
  return {
    notify: (about) => {
      if (open) channel.postMessage(about ?? 0);
    },
    close: () => {
      if (!open) return;
      open = false;
      channel.close();
    },
  };
};
