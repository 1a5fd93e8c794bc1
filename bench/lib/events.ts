import { simulatorEvents } from "../../lab/control";
import type { SimulatorEvent } from "../../lab/control";
import type { EngineEvent } from "./engine";

/** Whether an event is about the dynamic resource of this type (the type ends the URN's type part: `...dynamic/sglang-serve:SglangService::qwen-unit`). */
export const isType = (e: EngineEvent, type: string) => e.urn !== undefined && e.urn.includes(`dynamic/sglang-serve:${type}::`);

/** The earliest of `xs` at or after `t` that matches. */
export function firstAfter<T extends { t: number }>(xs: T[], t: number, pred: (x: T) => boolean): T | undefined {
    return xs.filter((x) => x.t >= t && pred(x)).sort((a, b) => a.t - b.t)[0];
}

/** The simulator's events after the first `before` (a count taken before the run). */
export function newSimEvents(labDir: string, before: number): SimulatorEvent[] {
    return simulatorEvents(labDir).slice(before);
}
