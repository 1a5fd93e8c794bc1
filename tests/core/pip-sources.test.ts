import * as assert from "node:assert/strict";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import { withField } from "./fixtures";

/** The field config staging its release from a venv section with `venv` merged in. */
function withVenv(venv: Record<string, unknown>): unknown {
    return withField((raw) => {
        delete raw.service.python;
        raw.service.venv = { root: "/opt/sglang", ...venv };
    });
}

/** The whole preview message for a config the validation must refuse. */
function refusal(raw: unknown): string {
    const result = validateStackConfig(raw);
    assert.ok(!result.ok, "expected the config to be refused");
    return formatConfigIssues(result.issues, "kpro5");
}

function accepted(raw: unknown): void {
    const result = validateStackConfig(raw);
    assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
}

describe("pip sources are safe by default (core/venv/pip-sources.ts, issue 34 finding 6)", () => {
    it("refuses a plain-http index, extra index or wheelhouse URL on a host that is not loopback, naming https://", () => {
        for (const [venv, key] of [
            [{ indexUrl: "http://pypi.example/simple" }, "service.venv.indexUrl"],
            [{ extraIndexUrls: ["https://download.pytorch.org/whl/cu128", "http://pypi.example/simple"] }, "service.venv.extraIndexUrls[1]"],
            [{ findLinks: ["/srv/wheels", "http://wheels.example/"] }, "service.venv.findLinks[1]"],
            [{ indexUrl: "http://127.evil.example/simple" }, "service.venv.indexUrl"],
        ] as const) {
            const text = refusal(withVenv(venv));
            assert.match(text, new RegExp(`${key.replace(/[.[\]]/g, "\\$&")} is plain http:// to .*, which is not a loopback host`), text);
            assert.match(
                text,
                /Use https:\/\/ \(e\.g\. https:\/\/pypi\.org\/simple\); plain http only for a loopback host \(127\.0\.0\.0\/8, localhost, \[::1\]\)/,
            );
        }
    });

    it("takes plain http on a loopback host (a local mirror), which pip itself trusts", () => {
        accepted(
            withVenv({
                indexUrl: "http://127.0.0.1:3141/root/pypi/+simple",
                extraIndexUrls: ["http://localhost:8080/simple", "http://[::1]:3141/simple"],
                findLinks: ["/srv/wheels", "http://127.0.0.2/wheels/"],
            }),
        );
    });

    it("refuses credentials in any pip URL without showing them, pointing at pip.conf or ~/.netrc", () => {
        for (const [venv, key] of [
            [{ indexUrl: "https://deploy:Pw0rdXyz@pypi.example/simple" }, "service.venv.indexUrl"],
            [{ extraIndexUrls: ["https://deploy:Pw0rdXyz@pypi.example/simple"] }, "service.venv.extraIndexUrls[0]"],
            [{ findLinks: ["https://Pw0rdXyz@wheels.example/"] }, "service.venv.findLinks[0]"],
            [{ pipArgs: ["--proxy=http://deploy:Pw0rdXyz@proxy.example:3128"] }, "service.venv.pipArgs[0]"],
        ] as const) {
            const text = refusal(withVenv(venv));
            assert.match(text, new RegExp(`${key.replace(/[.[\]]/g, "\\$&")} (must be a URL without credentials|carries credentials in a URL)`), text);
            assert.match(text, /put them in pip\.conf or ~\/\.netrc on the box/);
            assert.match(text, /\[credentials\]@/, "the value is shown with its credentials masked");
            assert.doesNotMatch(text, /Pw0rdXyz/);
        }
    });

    for (const [arg, fix] of [
        ["--trusted-host=pypi.example", /is --trusted-host, which pipArgs may not carry: serve the index over https:\/\/ in indexUrl, beside pipArgs/],
        ["--trusted-host", /is --trusted-host, which pipArgs may not carry: serve the index over https:\/\/ in indexUrl, beside pipArgs/],
        [
            "--extra-index-url=http://user:Pw0rdXyz@pypi.example/simple",
            /is --extra-index-url, which pipArgs may not carry: list the index in extraIndexUrls, beside pipArgs/,
        ],
        ["--index-url=https://pypi.example/simple", /is --index-url, which pipArgs may not carry: set the index in indexUrl, beside pipArgs/],
        ["--find-links=/srv/wheels", /is --find-links, which pipArgs may not carry: list the wheelhouse in findLinks, beside pipArgs/],
        ["--target=/usr/lib/python3/dist-packages", /is --target, which pipArgs may not carry: the stack installs only into the venv it stages \(venv\.root/],
        ["--root=/", /is --root, which pipArgs may not carry: the stack installs only into the venv/],
        ["--prefix=/usr", /is --prefix, which pipArgs may not carry: the stack installs only into the venv/],
        ["-i", /is pip's -i \(--index-url\), which pipArgs may not carry: set the index in indexUrl, beside pipArgs/],
        ["-ihttps://pypi.example/simple", /is pip's -i \(--index-url\), which pipArgs may not carry/],
        ["-f", /is pip's -f \(--find-links\), which pipArgs may not carry: list the wheelhouse in findLinks, beside pipArgs/],
        ["-t", /is pip's -t \(--target\), which pipArgs may not carry: the stack installs only into the venv/],
        ["--extra-index=https://pypi.example/simple", /is --extra-index \(an abbreviation pip may read as --extra-index-url\), which pipArgs may not carry/],
        ["--trusted=pypi.example", /is --trusted \(an abbreviation pip may read as --trusted-host\), which pipArgs may not carry/],
        ["--targ=/usr/lib/python3/dist-packages", /is --targ \(an abbreviation pip may read as --target\), which pipArgs may not carry/],
        ["--prefi=/usr", /is --prefi \(an abbreviation pip may read as --prefix\), which pipArgs may not carry/],
    ] as const) {
        it(`refuses ${arg.replace(/Pw0rdXyz/, "…")} in pipArgs, naming the key that replaces it`, () => {
            const text = refusal(withVenv({ pipArgs: ["--no-deps", arg] }));
            assert.match(text, new RegExp(`service\\.venv\\.pipArgs\\[1\\] ${fix.source}`), text);
            assert.doesNotMatch(text, /Pw0rdXyz/);
        });
    }

    it("refuses an index option given as two elements (--index-url, then the URL) at the option", () => {
        const text = refusal(withVenv({ pipArgs: ["--index-url", "https://pypi.example/simple"] }));
        assert.match(text, /service\.venv\.pipArgs\[0\] is --index-url, which pipArgs may not carry: set the index in indexUrl, beside pipArgs/);
    });

    it("keeps the pip options that neither add a source nor move the install (--no-index, --pre, --root-user-action, a proxy)", () => {
        accepted(
            withVenv({
                findLinks: ["/srv/wheels"],
                pipArgs: ["--no-deps", "--no-index", "--pre", "--prefer-binary", "--root-user-action=ignore", "--proxy=http://proxy.example:3128"],
            }),
        );
    });

    it("holds the gateway's venv to the same rules", () => {
        const raw = withField((r) => {
            (r as unknown as Record<string, unknown>).gateway = {
                smgVersion: "1.13.0",
                venv: { root: "/opt/smg", indexUrl: "http://pypi.example/simple", pipArgs: ["--trusted-host=pypi.example"] },
                listenHost: "0.0.0.0",
                endpointHost: "10.1.230.172",
            };
        });
        const text = refusal(raw);
        assert.match(text, /gateway\.venv\.indexUrl is plain http:\/\/ to pypi\.example, which is not a loopback host/);
        assert.match(text, /gateway\.venv\.pipArgs\[0\] is --trusted-host, which pipArgs may not carry/);
    });
});
