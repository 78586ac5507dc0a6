/**
 * XML of the S3 listener: answers are built here as strings (the S3 namespace on the root, elements in the order
 * the AWS S3 API Reference gives), request bodies (CreateBucketConfiguration, Delete, …) are parsed with
 * fast-xml-parser: no DTD, no entity expansion beyond the five predefined ones, a size bound checked by the caller
 * (`readXmlBody`). A body that is not well-formed XML is `MalformedXML` (400).
 */
import type { Readable } from 'node:stream';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { S3Errors } from './errors.js';

/** The namespace of every S3 answer document. */
export const S3_NS = 'http://s3.amazonaws.com/doc/2006-03-01/';

/** Largest XML request body read (DeleteObjects of 1,000 keys of 1,024 bytes fits), bytes. */
export const MAX_XML_BODY_BYTES = 2 * 1024 * 1024;

/** Text as XML character data: `& < > " '` escaped, and characters XML 1.0 cannot carry as `&#xN;`. */
export function xmlEscape(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[&<>"']|[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, (c) => {
    switch (c) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      case "'":
        return '&apos;';
      default:
        return `&#x${c.charCodeAt(0).toString(16)};`;
    }
  });
}

/** `<name>escaped value</name>`; nothing when `value` is undefined. */
export function el(name: string, value: string | number | boolean | undefined): string {
  if (value === undefined) return '';
  return `<${name}>${xmlEscape(String(value))}</${name}>`;
}

/** A whole answer document: declaration, then `<root xmlns="…">inner</root>`. `inner` is already XML. */
export function xmlDocument(root: string, inner: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${S3_NS}">${inner}</${root}>`;
}

/** An S3 error document (no namespace, as S3 answers). */
export function errorXml(e: { code: string; message: string; resource: string; requestId: string; extra?: Record<string, string> }): string {
  const extra = Object.entries(e.extra ?? {}).map(([k, v]) => el(k, v)).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${el('Code', e.code)}${el('Message', e.message)}${extra}${el('Resource', e.resource)}${el('RequestId', e.requestId)}</Error>`;
}

/** Time as S3 writes it in XML: ISO 8601 with milliseconds, UTC (`2026-11-27T21:05:00.000Z`). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: false,
  processEntities: true,
  // Numeric character references (`&#34;`, `&#x41;`) are decoded too: rclone writes the quotes around part ETags
  // in CompleteMultipartUpload as `&#34;`, and keys in a Delete body may carry any of them.
  htmlEntities: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // Elements that may repeat are always arrays, whatever their count.
  isArray: (name) => name === 'Object' || name === 'Part' || name === 'Tag' || name === 'CORSRule' || name === 'Rule',
});

/** A parsed XML element: text, or named children (text `#text`). */
export type XmlNode = string | { [name: string]: XmlNode | XmlNode[] | undefined };

/**
 * Parses an XML request body into plain objects (repeated elements as arrays). Throws `MalformedXML` when the text
 * is not well-formed or has no root element.
 */
export function parseXml(text: string): Record<string, XmlNode> {
  if (text.trim() === '' || XMLValidator.validate(text) !== true) throw S3Errors.MalformedXML();
  try {
    const doc = parser.parse(text) as unknown;
    if (typeof doc !== 'object' || doc === null) throw S3Errors.MalformedXML();
    return doc as Record<string, XmlNode>;
  } catch {
    throw S3Errors.MalformedXML();
  }
}

/** The text of a child element (`''` for an empty element), or undefined when absent or not text. */
export function textOf(node: XmlNode | XmlNode[] | undefined): string | undefined {
  if (node === undefined) return undefined;
  if (typeof node === 'string') return node;
  if (Array.isArray(node)) return undefined;
  const t = node['#text'];
  if (typeof t === 'string') return t;
  return Object.keys(node).length === 0 ? '' : undefined;
}

/**
 * Reads a request body of at most `maxBytes` (MAX_XML_BODY_BYTES by default) as UTF-8 text; more →
 * `MalformedXML` (S3 answers so for an oversized Delete); the rest is left unread (the connection closes after the answer).
 */
export async function readXmlBody(body: Readable, maxBytes = MAX_XML_BODY_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Not destroyed when refused: a destroyed request would take the socket (and the answer) with it.
  for await (const chunk of body.iterator({ destroyOnReturn: false })) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > maxBytes) {
      throw S3Errors.MalformedXML(`the XML body exceeds ${maxBytes} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}
