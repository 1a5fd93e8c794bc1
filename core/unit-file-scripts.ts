/**
 * The rollout's scripts for the unit's files on the box (pure): keep the unit
 * that runs now beside it, and put it back when the new one does not come up.
 * Every path goes through core/shell.ts's one quoting function.
 */
import { shQuote } from "./shell";

/** A unit file and its EnvironmentFile (providers/unit-view.ts unitPaths and previousPaths). */
export interface UnitFiles {
    unit: string;
    environmentFile: string;
}

/** keepPreviousUnitScript's exit status when there is no unit to keep (a first rollout). */
export const NO_UNIT_TO_KEEP = 3;

/**
 * Copies the current unit file and EnvironmentFile to the kept ones (mode
 * and times kept). A unit without an EnvironmentFile leaves no kept one
 * behind, so a restore does not bring back secrets of an older unit. Exits
 * NO_UNIT_TO_KEEP when there is no unit file.
 */
export function keepPreviousUnitScript(current: UnitFiles, kept: UnitFiles): string {
    return (
        `[ -f ${shQuote(current.unit)} ] || exit ${NO_UNIT_TO_KEEP}; cp -p ${shQuote(current.unit)} ${shQuote(kept.unit)}; ` +
        `if [ -f ${shQuote(current.environmentFile)} ]; then cp -p ${shQuote(current.environmentFile)} ${shQuote(kept.environmentFile)}; ` +
        `else rm -f ${shQuote(kept.environmentFile)}; fi`
    );
}

/**
 * Puts the kept unit file and EnvironmentFile back in place; without a kept
 * EnvironmentFile the current one is removed (the kept unit had none).
 */
export function restorePreviousUnitScript(current: UnitFiles, kept: UnitFiles): string {
    return (
        `cp -p ${shQuote(kept.unit)} ${shQuote(current.unit)}; ` +
        `if [ -f ${shQuote(kept.environmentFile)} ]; then cp -p ${shQuote(kept.environmentFile)} ${shQuote(current.environmentFile)}; ` +
        `else rm -f ${shQuote(current.environmentFile)}; fi`
    );
}
