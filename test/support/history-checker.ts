/**
 * The history checker of the fault suite (issue 48, test/faults/): every message a test puts into
 * Relay is followed to its end, and the verdict names each message lost, popped twice, or handed
 * to a messenger twice.
 *
 * Messages are known by a text unique within one history (`in-3 #5`, `out-17`): the contact's text
 * of an inbound message, the body of an outbound one. A test tells the checker
 * - inbound: what it injected (`injected`: the injection is known to have been recorded; `injectedMaybe`:
 *   its outcome is unknown, a CLI that failed half-way, say) and each message a poll answered (`popped`);
 * - outbound: each send and how it was answered (`accepted` with the message id of the 202,
 *   `refused` for an answer that accepted nothing, a 503 say, `sentMaybe` when no answer came), and
 *   each hand-off the messenger saw (`handed`, from the simulator's outbox or a fake daemon: ok or not).
 *
 * The verdict:
 * - **lost**: an inbound message injected for sure and never popped; an outbound message accepted
 *   and never handed to its messenger successfully;
 * - **popped twice**: an inbound message that polls answered more than once;
 * - **delivered twice**: an outbound message the messenger took (ok) more than once;
 * - **refused but delivered**: an outbound message whose send was refused and that reached the
 *   messenger all the same (a client that retries would send it twice);
 * - **unknown**: a message popped or handed that the test never put in.
 * A message of unknown outcome (`injectedMaybe`, `sentMaybe`) may be missing, never twice.
 */

export interface HistoryCounts {
  readonly inbound: { injected: number; injectedMaybe: number; popped: number; lost: number; poppedTwice: number; unknown: number };
  readonly outbound: {
    accepted: number;
    refused: number;
    sentMaybe: number;
    delivered: number;
    failedAttempts: number;
    lost: number;
    deliveredTwice: number;
    refusedButDelivered: number;
    unknown: number;
  };
}

export interface HistoryVerdict {
  readonly counts: HistoryCounts;
  readonly lost: readonly string[];
  readonly poppedTwice: readonly string[];
  readonly deliveredTwice: readonly string[];
  readonly refusedButDelivered: readonly string[];
  readonly unknown: readonly string[];
  /** No violation of any kind. */
  readonly clean: boolean;
}

type Injection = 'sure' | 'maybe';
type SendOutcome = { kind: 'accepted'; messageId: string } | { kind: 'refused'; status: number } | { kind: 'maybe' };

export interface Handing {
  readonly ok: boolean;
  /** Which instance (or daemon) handed it, and when (epoch ms): for the report. */
  readonly via?: string;
  readonly at?: number;
  readonly messageId?: string;
}

export class HistoryChecker {
  private readonly injections = new Map<string, Injection>();
  private readonly pops = new Map<string, string[]>();
  private readonly sends = new Map<string, SendOutcome>();
  private readonly handings = new Map<string, Handing[]>();

  /** An inbound message known to be recorded by Relay (the injection answered success). */
  injected(text: string): void {
    this.once(this.injections, text, 'sure', 'injected');
  }

  /** An inbound message whose injection may or may not have been recorded. */
  injectedMaybe(text: string): void {
    this.once(this.injections, text, 'maybe', 'injected');
  }

  /** A poll answered this message (`via`: the instance that answered). */
  popped(text: string, via = ''): void {
    const seen = this.pops.get(text);
    if (seen) seen.push(via);
    else this.pops.set(text, [via]);
  }

  /** A send answered 202 for this message. */
  accepted(text: string, messageId: string): void {
    this.once(this.sends, text, { kind: 'accepted', messageId }, 'sent');
  }

  /** A send was answered without accepting this message (a 503, a 429). */
  refused(text: string, status: number): void {
    this.once(this.sends, text, { kind: 'refused', status }, 'sent');
  }

  /** A send got no answer (the connection failed): the message may or may not be accepted. */
  sentMaybe(text: string): void {
    this.once(this.sends, text, { kind: 'maybe' }, 'sent');
  }

  /** The messenger was handed this message (one attempt). Replaces nothing: call it once per hand-off seen. */
  handed(text: string, handing: Handing): void {
    const seen = this.handings.get(text);
    if (seen) seen.push(handing);
    else this.handings.set(text, [handing]);
  }

  /** Forgets every hand-off told so far (to read a messenger's whole outbox again). */
  clearHandings(): void {
    this.handings.clear();
  }

  /** Inbound messages injected for sure and not popped yet. */
  notYetPopped(): string[] {
    return [...this.injections].filter(([text, how]) => how === 'sure' && !this.pops.has(text)).map(([text]) => text);
  }

  /** Outbound messages accepted and not handed successfully yet. */
  notYetDelivered(): string[] {
    return [...this.sends].filter(([text, outcome]) => outcome.kind === 'accepted' && !(this.handings.get(text) ?? []).some((h) => h.ok)).map(([text]) => text);
  }

  /** What went where: a hand-off list of one message, for a failure's message. */
  handingsOf(text: string): readonly Handing[] {
    return this.handings.get(text) ?? [];
  }

  /** Hand-offs told so far that `via` made (ok or not). */
  handedBy(via: string): number {
    let n = 0;
    for (const handings of this.handings.values()) for (const h of handings) if (h.via === via) n++;
    return n;
  }

  verdict(): HistoryVerdict {
    const lost: string[] = [];
    const poppedTwice: string[] = [];
    const deliveredTwice: string[] = [];
    const refusedButDelivered: string[] = [];
    const unknown: string[] = [];
    for (const [text, how] of this.injections) if (how === 'sure' && !this.pops.has(text)) lost.push(`inbound ${text}`);
    for (const [text, via] of this.pops) {
      if (!this.injections.has(text)) unknown.push(`popped ${text}`);
      if (via.length > 1) poppedTwice.push(`${text} (via ${via.join(', ')})`);
    }
    let delivered = 0;
    let failedAttempts = 0;
    for (const [text, handings] of this.handings) {
      const ok = handings.filter((h) => h.ok);
      failedAttempts += handings.length - ok.length;
      if (ok.length > 0) delivered++;
      const sent = this.sends.get(text);
      if (!sent) unknown.push(`handed ${text}`);
      if (ok.length > 1) deliveredTwice.push(`${text} (${ok.map(describe).join('; ')})`);
      if (sent?.kind === 'refused' && ok.length > 0) refusedButDelivered.push(`${text} (refused with ${sent.status})`);
    }
    for (const [text, outcome] of this.sends) if (outcome.kind === 'accepted' && !(this.handings.get(text) ?? []).some((h) => h.ok)) lost.push(`outbound ${text} (${outcome.messageId})`);
    const values = [...this.injections.values()];
    const outcomes = [...this.sends.values()];
    const counts: HistoryCounts = {
      inbound: {
        injected: values.filter((v) => v === 'sure').length,
        injectedMaybe: values.filter((v) => v === 'maybe').length,
        popped: this.pops.size,
        lost: lost.filter((l) => l.startsWith('inbound ')).length,
        poppedTwice: poppedTwice.length,
        unknown: unknown.filter((u) => u.startsWith('popped ')).length,
      },
      outbound: {
        accepted: outcomes.filter((o) => o.kind === 'accepted').length,
        refused: outcomes.filter((o) => o.kind === 'refused').length,
        sentMaybe: outcomes.filter((o) => o.kind === 'maybe').length,
        delivered,
        failedAttempts,
        lost: lost.filter((l) => l.startsWith('outbound ')).length,
        deliveredTwice: deliveredTwice.length,
        refusedButDelivered: refusedButDelivered.length,
        unknown: unknown.filter((u) => u.startsWith('handed ')).length,
      },
    };
    const clean = lost.length + poppedTwice.length + deliveredTwice.length + refusedButDelivered.length + unknown.length === 0;
    return { counts, lost, poppedTwice, deliveredTwice, refusedButDelivered, unknown, clean };
  }

  /** Throws, naming every violation (at most 20 of each kind), unless the history is clean. */
  assertClean(label = 'history'): HistoryVerdict {
    const verdict = this.verdict();
    if (verdict.clean) return verdict;
    const part = (name: string, items: readonly string[]) => (items.length === 0 ? [] : [`${name} (${items.length}): ${items.slice(0, 20).join(' | ')}${items.length > 20 ? ' | …' : ''}`]);
    throw new Error(
      [
        `${label}: the history checker found violations; counts ${JSON.stringify(verdict.counts)}`,
        ...part('lost', verdict.lost),
        ...part('popped twice', verdict.poppedTwice),
        ...part('delivered twice', verdict.deliveredTwice),
        ...part('refused but delivered', verdict.refusedButDelivered),
        ...part('unknown', verdict.unknown),
      ].join('\n'),
    );
  }

  private once<T>(map: Map<string, T>, text: string, value: T, what: string): void {
    if (map.has(text)) throw new Error(`${text} ${what} twice: the texts of one history must be unique`);
    map.set(text, value);
  }
}

const describe = (h: Handing) => [h.via, h.at !== undefined ? new Date(h.at).toISOString().slice(11, 23) : undefined, h.messageId].filter(Boolean).join(' ');
