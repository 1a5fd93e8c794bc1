/**
 * The rollout's scripts for the unit's files on the box (pure): keep the unit
 * that runs now beside it, and put it back when the new one does not come up.
 * Every path goes through core/shell.ts's one quoting function.
 */
import { shQuote } from "../shell";

/** A unit file and its two 0600 files, the EnvironmentFile and SGLang's --config file (core/unit/unit-read.ts unitPaths, providers/unit-view.ts previousPaths). */
export interface UnitFiles {
    unit: string;
    environmentFile: string;
    serverConfigFile: string;
}

/** Copies `from` to `to` keeping its mode (0600 stays 0600), or removes `to` when there is no `from`. */
function copyOrRemove(from: string, to: string): string {
    return `if [ -f ${shQuote(from)} ]; then cp -p ${shQuote(from)} ${shQuote(to)}; else rm -f ${shQuote(to)}; fi`;
}

/** keepPreviousUnitScript's exit status when there is no unit to keep (a first rollout). */
export const NO_UNIT_TO_KEEP = 3;

/**
 * Copies the current unit file and its 0600 files to the kept ones (mode
 * and times kept). A unit without one of them leaves no kept one behind, so
 * a restore does not bring back secrets of an older unit. Exits
 * NO_UNIT_TO_KEEP when there is no unit file.
 */
export function keepPreviousUnitScript(current: UnitFiles, kept: UnitFiles): string {
    return [
        `[ -f ${shQuote(current.unit)} ] || exit ${NO_UNIT_TO_KEEP}`,
        `cp -p ${shQuote(current.unit)} ${shQuote(kept.unit)}`,
        copyOrRemove(current.environmentFile, kept.environmentFile),
        copyOrRemove(current.serverConfigFile, kept.serverConfigFile),
    ].join("; ");
}

/**
 * Puts the kept unit file and its 0600 files back in place; a file the kept
 * unit did not have is removed.
 */
export function restorePreviousUnitScript(current: UnitFiles, kept: UnitFiles): string {
    return [
        `cp -p ${shQuote(kept.unit)} ${shQuote(current.unit)}`,
        copyOrRemove(kept.environmentFile, current.environmentFile),
        copyOrRemove(kept.serverConfigFile, current.serverConfigFile),
    ].join("; ");
}
