/**
 * The served config a service's props declare, as the serving-quality gate
 * keys its figures (core/serving/served-config-key.ts), and the figures the record
 * holds a rollout of it to (core/serving/serving-history.ts): for the preview's
 * restart line (check) and the rollout, which must agree.
 */
import { drafterPath } from "../../core/box/box-facts";
import { servedConfigKey } from "../../core/serving/served-config-key";
import { figuresHeldTo, type HeldFigures } from "../../core/serving/serving-history";
import type { ServiceProps } from "./props";

/**
 * The key of the config `props` declare. `drafterDigest`: the drafter folder's
 * digest as read on the box (what the server loads, or loaded); where it was
 * not read, the pinned one (service.speculative.draftModelDigest, which a
 * folder must match to be served at all).
 */
export function servedConfigKeyOf(props: ServiceProps, drafterDigest: string | undefined): string {
    const separate = drafterPath(props.expectBox) !== undefined;
    return servedConfigKey({
        sglangVersion: props.expectBox?.sglangVersion ?? null,
        drafter: separate ? (drafterDigest ?? props.expectBox?.drafterDigest ?? null) : null,
        command: props.command,
        flags: props.flags,
        environment: props.environment,
    });
}

/** The figures a rollout of `props` is held to, from the record (the last good figures and the history of verified configs). */
export function heldFiguresOf(
    props: ServiceProps,
    drafterDigest: string | undefined,
    record: Pick<Partial<ServiceProps>, "servingFigures" | "servingHistory">,
): HeldFigures | undefined {
    return figuresHeldTo(servedConfigKeyOf(props, drafterDigest), record.servingHistory, record.servingFigures);
}
