/**
 * Numbers and booleans as `pulumi config set --path` stores them: a value set
 * with `--path` inside an object is a string ("0.87", "true"), even with
 * `--type` (Pulumi 3.248). Like the SDK's `Config.requireNumber` /
 * `requireBoolean`, an unambiguous string is taken for the number or boolean
 * it spells; anything else stays as it is, so the schema rejects it with its
 * usual message ("must be a number, not string").
 */
import { z } from "zod";

/** A decimal number as written by hand: optional sign, digits, optional fraction and exponent. */
const DECIMAL = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

export function numberFromString(value: unknown): unknown {
    return typeof value === "string" && DECIMAL.test(value) ? Number(value) : value;
}

export function booleanFromString(value: unknown): unknown {
    if (value === "true") return true;
    if (value === "false") return false;
    return value;
}

/** `schema`, also accepting its number written as a string. */
export const fromNumericString = <T extends z.ZodType>(schema: T) => z.preprocess(numberFromString, schema);

/** `schema`, also accepting "true" and "false". */
export const fromBooleanString = <T extends z.ZodType>(schema: T) => z.preprocess(booleanFromString, schema);
