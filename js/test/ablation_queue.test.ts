import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApplyQueue } from "../src/views/ablation/controls";
import type { AblationDict } from "../src/views/ablation/state";

const HEAD = (layer: number, head: number): AblationDict => ({
  edits: [{ stack: "self", layer, head, mode: "zero", scale: 0 }],
});

/** The widget model as a host holds it: what the page saved (each save_changes a list of the keys set since the
 * last) and any custom message sent; `kernel(...)` is a state update from Python (sets, never saved). */
class FakeModel {
  state: Record<string, unknown> = {
    ablation: { edits: [] },
    mode: "zero",
    _page_seq: 0,
    _payload: { seq: 0 },
  };
  saves: Array<Record<string, unknown>> = [];
  messages: unknown[] = [];
  private pending: Record<string, unknown> = {};
  get(key: string): never {
    return this.state[key] as never;
  }
  set(key: string, value: unknown): void {
    this.state[key] = value;
    this.pending[key] = value;
  }
  save_changes(): void {
    this.saves.push(this.pending);
    this.pending = {};
  }
  send(content: unknown): void {
    this.messages.push(content);
  }
  kernel(update: Record<string, unknown>): void {
    Object.assign(this.state, update);
  }
}

describe("ApplyQueue", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("saves a click as the widget's own traits (what marimo's value sees), never as a custom message", () => {
    const model = new FakeModel();
    const queue = new ApplyQueue(
      model as never,
      () => {},
      () => {},
    );
    queue.change(HEAD(0, 1), 0);
    vi.runAllTimers();
    expect(model.messages).toEqual([]);
    expect(model.saves.length).toBe(1);
    const [saved] = model.saves;
    expect(saved.ablation).toEqual(HEAD(0, 1));
    expect(saved.mode).toBe("zero");
    expect(saved._page_seq).toBeGreaterThan(0);
    expect(queue.idle()).toBe(false);
  });

  it("answers come back through _payload.seq; nothing is saved in answer to Python (no loop)", () => {
    const model = new FakeModel();
    const queue = new ApplyQueue(
      model as never,
      () => {},
      () => {},
    );
    queue.change(HEAD(0, 1), 0);
    vi.runAllTimers();
    queue.change(HEAD(1, 2), 0); // while the first is unanswered: only remembered
    vi.runAllTimers();
    expect(model.saves.length).toBe(1);
    const first = model.saves[0]._page_seq as number;
    model.kernel({ _payload: { seq: first, ablation: HEAD(0, 1) } });
    queue.answered(); // the latest change goes up now, once
    expect(model.saves.length).toBe(2);
    expect(model.saves[1].ablation).toEqual(HEAD(1, 2));
    const second = model.saves[1]._page_seq as number;
    expect(second).toBeGreaterThan(first);
    model.kernel({ _payload: { seq: second, ablation: HEAD(1, 2) } });
    queue.answered();
    expect(queue.idle()).toBe(true);
    // Python's own change of the edit (w.ablation = ... in a cell) is taken, not saved back
    model.kernel({ ablation: HEAD(1, 3) });
    queue.takeAblation();
    queue.takeMode();
    queue.answered();
    expect(queue.want).toEqual(HEAD(1, 3));
    expect(model.saves.length).toBe(2);
    expect(model.messages).toEqual([]);
  });
});
