/**
 * Form fields and their errors: a failure is shown beside the field it is about, in words (the
 * account API names its fields, `Invalid webhookUrl: …`; the page says "The webhook URL …"), and
 * the focus moves to that field; a failure of the whole form is shown beside its button and gets
 * the focus. A text field with a limit refuses longer input visibly instead of cutting it.
 */
import { useLayoutEffect, useState } from 'preact/hooks';
import type { Failure } from './api';
import { ErrorNote } from './ui';

/** The account API's field names, as a sentence names them. */
const FIELD_WORDS: Record<string, string> = {
  name: 'The name',
  webhookUrl: 'The webhook URL',
  webhookAuthHeaderName: 'The header name',
  webhookAuthSecret: 'The secret',
  webhookAuthType: 'How Relay authenticates',
  contactId: 'The contact id',
  appIds: 'The apps',
  protocol: 'The messengers',
};

/** `Invalid webhookUrl: must use https` → the field and `The webhook URL must use https.` */
export const inWords = (message: string): { field?: string; text: string } => {
  const said = /^(?:Invalid field|Invalid|Missing required field:) ?([A-Za-z]+)(?: for [a-z]+)?(?::\s*(.*))?$/.exec(message);
  const field = said?.[1];
  if (!said || !field || !FIELD_WORDS[field]) return { text: message };
  const missing = message.startsWith('Missing');
  const rest = said[2];
  const text = missing ? `${FIELD_WORDS[field]} is required.` : rest ? `${FIELD_WORDS[field]} ${/^(must|is|has)\b/.test(rest) ? '' : 'is wrong: '}${rest}` : `${FIELD_WORDS[field]} is not valid.`;
  return { field, text: /[.)]$/.test(text) ? text : `${text}.` };
};

export interface FormErrors {
  /** The message beside a field (by the field's element id). */
  readonly of: (id: string) => string | undefined;
  /** The failure of the whole form, shown beside its button. */
  readonly failure: Failure | undefined;
  /** The form's element id prefix (the form failure's id is `<prefix>-error`). */
  readonly prefix: string;
  /** Shows a failure beside the field it names (fields: API field → element id), or beside the form's button. */
  readonly show: (failure: Failure) => void;
  /** Refuses the form with a message beside a field, before anything is sent; the focus goes to `focus` (the field itself by default). */
  readonly refuse: (id: string, message: string, focus?: string) => void;
  readonly clear: () => void;
}

/** The errors of one form; `fields` maps the account API's field names to the form's element ids. */
export const useFormErrors = (prefix: string, fields: Readonly<Record<string, string>>): FormErrors => {
  const [byField, setByField] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<Failure | undefined>();
  const [focus, setFocus] = useState<{ id: string } | undefined>();
  // After the message is on the page, the focus goes to the field (which it describes) or to the form's message.
  useLayoutEffect(() => {
    if (focus) document.getElementById(focus.id)?.focus();
  }, [focus]);
  const refuse = (id: string, message: string, focus = id) => {
    setFailure(undefined);
    setByField({ [id]: message });
    setFocus({ id: focus });
  };
  return {
    of: (id) => byField[id],
    failure,
    prefix,
    refuse,
    show: (given) => {
      const { field, text } = inWords(given.message);
      const id = field ? fields[field] : undefined;
      if (id) return refuse(id, text);
      setByField({});
      setFailure({ ...given, message: text });
      setFocus({ id: `${prefix}-error` });
    },
    clear: () => {
      setByField({});
      setFailure(undefined);
    },
  };
};

/** The whole form's failure, beside its button (focusable, so that the focus can be moved to it). */
export const FormError = (props: { errors: FormErrors; onRetry?: () => void }) => (
  <div id={`${props.errors.prefix}-error`} tabIndex={-1}>
    <ErrorNote failure={props.errors.failure} onRetry={props.onRetry} />
  </div>
);

/** The message beside a field that is not a text field (a fieldset of checkboxes): `<id>-error`, which the field names in aria-describedby. */
export const FieldError = (props: { errors: FormErrors; id: string }) => {
  const error = props.errors.of(props.id);
  return error ? (
    <p class="field-error" id={`${props.id}-error`}>
      {error}
    </p>
  ) : null;
};

/** Why a value is refused before it is sent: longer than the field's limit. */
export const overLimit = (value: string, limit: number): string | undefined =>
  value.length > limit ? `Too long: ${value.length.toLocaleString('en')} characters, and at most ${limit.toLocaleString('en')} fit.` : undefined;

type InputProps = { type?: 'text' | 'url' | 'password' | 'email'; required?: boolean; autocomplete?: string };

/**
 * A labelled text field: its hint (the limit, when it has one), and its error beside it, which
 * describes it (aria-describedby) and marks it invalid. A value over the limit is kept and said.
 */
export const TextField = (props: { id: string; label: string; value: string; onValue: (value: string) => void; errors: FormErrors; limit?: number; hint?: string } & InputProps) => {
  const { id, label, value, onValue, errors, limit, hint, ...input } = props;
  const error = errors.of(id) ?? (limit !== undefined ? overLimit(value, limit) : undefined);
  const said = hint ?? (limit !== undefined ? `At most ${limit.toLocaleString('en')} characters.` : undefined);
  const described = [said && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ');
  return (
    <>
      <label for={id}>{label}</label>
      <input {...input} id={id} value={value} onInput={(e) => onValue((e.target as HTMLInputElement).value)} aria-invalid={error ? 'true' : undefined} aria-describedby={described || undefined} />
      {said && (
        <p class="hint" id={`${id}-hint`}>
          {said}
        </p>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </>
  );
};

/** The first field over its limit, refused beside it; true when every field fits. */
export const withinLimits = (errors: FormErrors, fields: ReadonlyArray<readonly [id: string, value: string, limit: number]>): boolean => {
  for (const [id, value, limit] of fields) {
    const problem = overLimit(value, limit);
    if (problem) {
      errors.refuse(id, problem);
      return false;
    }
  }
  return true;
};

/** Why a webhook URL is refused before it is sent: only http and https URLs receive webhooks. */
export const webhookUrlProblem = (value: string): string | undefined => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'The webhook URL must be a whole address, such as https://bots.example.com/relay-hook.';
  }
  return url.protocol === 'https:' || url.protocol === 'http:' ? undefined : `The webhook URL must start with https:// (or http://): Relay does not post to ${url.protocol} URLs.`;
};
