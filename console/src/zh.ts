export const ZH: Record<string, string> = {};
