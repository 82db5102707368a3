/** Splits a stream's text into `\n`-terminated lines (line-delimited JSON), however it arrives in chunks. */
export class LineBuffer {
  private buffered = '';

  /** The whole lines this chunk completes, without their `\n`. */
  push(chunk: string): string[] {
    this.buffered += chunk;
    const lines = this.buffered.split('\n');
    this.buffered = lines.pop()!;
    return lines;
  }

  /** Characters of a line not yet ended (to bound it). */
  get pending(): number {
    return this.buffered.length;
  }
}
