// Icons drawn as inline SVG, shipped in the bundle: emoji (📁 📄) show as empty boxes where no emoji font is
// installed. Each takes the text colour (currentColor) and is hidden from screen readers (the row says what it is).

const box = { width: 20, height: 20, viewBox: '0 0 20 20', 'aria-hidden': true, focusable: false } as const;

/** A folder (a common prefix in the Files list). */
export function FolderIcon() {
  return (
    <svg {...box} className="icon" data-icon="folder">
      <path d="M2 5.5A1.5 1.5 0 0 1 3.5 4h4l2 2h7A1.5 1.5 0 0 1 18 7.5v7a1.5 1.5 0 0 1-1.5 1.5h-13A1.5 1.5 0 0 1 2 14.5z" fill="#f5b942" stroke="#c98a12" strokeWidth="1" />
    </svg>
  );
}

/** A file without a thumbnail. */
export function FileIcon() {
  return (
    <svg {...box} className="icon" data-icon="file">
      <path d="M5 2.5h6.5L15.5 6.5v11h-10.5z" fill="#fff" stroke="#8a96a3" strokeWidth="1.2" strokeLinejoin="round" />
      <path d="M11.5 2.5v4h4" fill="none" stroke="#8a96a3" strokeWidth="1.2" strokeLinejoin="round" />
    </svg>
  );
}

/** A close mark (the object panel's button). */
export function CloseIcon() {
  return (
    <svg width="14" height="14" viewBox="0 0 14 14" aria-hidden focusable={false} className="icon" data-icon="close">
      <path d="M3 3l8 8M11 3l-8 8" stroke="currentColor" strokeWidth="1.6" strokeLinecap="round" />
    </svg>
  );
}
