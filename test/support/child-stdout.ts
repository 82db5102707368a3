import fs from 'node:fs';

/**
 * Writes a line to a fixture process's stdout, which is a pipe its parent test reads. A parent
 * busy on a loaded machine lets the pipe fill, and `fs.writeSync` on a full non-blocking pipe
 * throws EAGAIN (it failed a CI run of the embedded broker spec): the line is written in full,
 * waiting a millisecond whenever the pipe is full.
 */
export const printLine = async (line: string): Promise<void> => {
  const bytes = Buffer.from(`${line}\n`);
  let written = 0;
  while (written < bytes.length) {
    try {
      written += fs.writeSync(1, bytes, written);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }
};
