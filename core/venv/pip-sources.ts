/**
 * Where pip installs from, as a venv section declares it (venv.indexUrl,
 * extraIndexUrls, findLinks, pipArgs): the installs run as root on the box
 * and take no hashes, so the sources must be safe by default (issue 34,
 * finding 6). Only https:// (plain http only on a loopback host, which pip
 * itself treats as a secure origin), no credentials in any URL (they would be
 * on the box's command line and in the state: pip.conf or ~/.netrc on the box
 * holds them), and pipArgs may neither add a source nor move the install out
 * of the venv. Each answer names the fix; none quotes a credential.
 */
import { z } from "zod";
import { ABSOLUTE_PATH, isLoopbackAuthority } from "../config/values";
import { urlHasCredentials } from "../secrets/secret-like";

/** The example every URL message gives. */
const EXAMPLE = "e.g. https://pypi.org/simple";

/** Why `url` cannot be a pip index or wheelhouse URL, or undefined when it can. Never quotes the URL. */
export function pipSourceProblem(url: string): string | undefined {
    if (urlHasCredentials(url)) {
        return (
            `must be a URL without credentials (put them in pip.conf or ~/.netrc on the box), ${EXAMPLE}: ` +
            "here they would be on the box's command line and in the state"
        );
    }
    const shape = /^(https?):\/\/([A-Za-z0-9.:[\]-]+)(\/[A-Za-z0-9._~/%+-]*)?$/.exec(url);
    if (!shape) {
        return `must be an https:// URL of letters, digits and ._~/%+- without credentials (put them in pip.conf or ~/.netrc on the box), ${EXAMPLE}`;
    }
    if (shape[1] === "http" && !isLoopbackAuthority(shape[2]!)) {
        return (
            `is plain http:// to ${shape[2]}, which is not a loopback host: anyone on the path could hand pip, which installs as root, packages of their own. ` +
            `Use https:// (${EXAMPLE}); plain http only for a loopback host (127.0.0.0/8, localhost, [::1])`
        );
    }
    return undefined;
}

/** A pip index URL (venv.indexUrl, venv.extraIndexUrls). */
export const pipIndexUrl = () =>
    z.string().superRefine((url, ctx) => {
        const problem = pipSourceProblem(url);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
    });

/** A wheelhouse (venv.findLinks): a folder on the box, or a URL held to pipSourceProblem. */
export const pipFindLinks = () =>
    z.string().superRefine((entry, ctx) => {
        const problem = entry.startsWith("/")
            ? ABSOLUTE_PATH.test(entry)
                ? undefined
                : "must be an absolute path of letters, digits and ._/@+- only (rename or symlink the folder), or an https:// URL"
            : pipSourceProblem(entry);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
    });

const INSTALL_STAYS_IN_THE_VENV =
    "the stack installs only into the venv it stages (venv.root, or one adopted in venv.adopt); pip runs as root there, so anywhere else would overwrite the box's own files";

/** pip options pipArgs may not carry (in any form), with what replaces each. */
const REFUSED_PIP_OPTIONS: ReadonlyArray<{ long: string; short?: string; fix: string }> = [
    { long: "--index-url", short: "-i", fix: "set the index in indexUrl, beside pipArgs" },
    { long: "--extra-index-url", fix: "list the index in extraIndexUrls, beside pipArgs" },
    { long: "--find-links", short: "-f", fix: "list the wheelhouse in findLinks, beside pipArgs" },
    {
        long: "--trusted-host",
        fix: "serve the index over https:// in indexUrl, beside pipArgs (pip trusts plain http on a loopback host without it); --trusted-host lets anyone on the path swap the packages",
    },
    { long: "--target", short: "-t", fix: INSTALL_STAYS_IN_THE_VENV },
    { long: "--root", fix: INSTALL_STAYS_IN_THE_VENV },
    { long: "--prefix", fix: INSTALL_STAYS_IN_THE_VENV },
];

/** pip options that are a prefix of a refused one but are options of their own (optparse takes an exact name before an abbreviation). */
const OWN_PIP_OPTIONS: readonly string[] = ["--pre"];

const PIP_ARG_SHAPE = /^--[a-z][a-z0-9-]*(=[A-Za-z0-9._:/@+,=-]+)?$/;

/**
 * Why `arg` cannot be one of venv.pipArgs, or undefined when it can. pip's
 * parser (optparse) takes any unambiguous prefix of a long option (`--extra`
 * is `--extra-index-url`), so those are refused as their option is.
 */
export function pipArgProblem(arg: string): string | undefined {
    if (/^-[^-]/.test(arg)) {
        const refused = REFUSED_PIP_OPTIONS.find((o) => o.short !== undefined && arg.startsWith(o.short));
        if (refused) return `is pip's ${refused.short} (${refused.long}), which pipArgs may not carry: ${refused.fix}`;
    }
    const name = arg.split("=")[0]!;
    if (/^--[a-z]/.test(name) && !OWN_PIP_OPTIONS.includes(name)) {
        const refused = REFUSED_PIP_OPTIONS.find((o) => o.long.startsWith(name));
        if (refused) {
            const which = name === refused.long ? refused.long : `${name} (an abbreviation pip may read as ${refused.long})`;
            return `is ${which}, which pipArgs may not carry: ${refused.fix}`;
        }
    }
    if (urlHasCredentials(arg.slice(arg.indexOf("=") + 1))) {
        return "carries credentials in a URL: put them in pip.conf or ~/.netrc on the box (here they would be on the box's command line and in the state)";
    }
    if (!PIP_ARG_SHAPE.test(arg)) return "must be a pip option as --name or --name=value (letters, digits and ._:/@+,=-)";
    return undefined;
}

/** One of venv.pipArgs. */
export const pipArg = () =>
    z.string().superRefine((arg, ctx) => {
        const problem = pipArgProblem(arg);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
    });
