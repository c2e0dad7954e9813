import { wordCount } from "./text";

// Token estimate `approx` (mirrors durable_cli/core/tokens.py): max(ceil(chars/4), ceil(words*1.3)) + 4.
export function approx(text: string): number {
  const chars = [...text].length;
  const words = wordCount(text);
  return Math.max(Math.ceil(chars / 4), Math.ceil(words * 1.3)) + 4;
}
