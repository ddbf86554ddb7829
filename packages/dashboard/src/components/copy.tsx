/**
 * Values an operator copies or scans: {@link CopyValue} (monospace text with a copy button),
 * {@link QrCode} (an address or `otpauth://` URI as a QR image, generated in the page by
 * `qrcode`; nothing leaves the browser).
 */
import { Button, Code, CopyButton, Group, Image, Skeleton, Tooltip } from '@mantine/core';
import QRCode from 'qrcode';
import { useEffect, useState } from 'react';

/** `value` in monospace with a copy button labelled "Copy <label>". */
export function CopyValue({ value, label = 'value' }: { value: string; label?: string }) {
  return (
    <Group gap={4} wrap="nowrap" style={{ minWidth: 0 }}>
      <Code style={{ overflowWrap: 'anywhere', whiteSpace: 'normal' }}>{value}</Code>
      <CopyButton value={value} timeout={1500}>
        {({ copied, copy }) => (
          <Tooltip label={copied ? 'Copied' : `Copy ${label}`} withArrow>
            {/* text, not a glyph: symbol glyphs are missing from many system fonts (headless Chromium showed boxes) */}
            <Button variant="subtle" onClick={copy} aria-label={`Copy ${label}`} size="compact-xs">
              {copied ? 'Copied' : 'Copy'}
            </Button>
          </Tooltip>
        )}
      </CopyButton>
    </Group>
  );
}

/** A QR code of `value`, `size` CSS pixels square, with `alt` text. */
export function QrCode({ value, alt, size = 180 }: { value: string; alt: string; size?: number }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    QRCode.toDataURL(value, { margin: 1, width: size * 2, errorCorrectionLevel: 'M' })
      .then((url) => {
        if (live) setSrc(url);
      })
      .catch(() => setSrc(null));
    return () => {
      live = false;
    };
  }, [value, size]);
  return src === null ? <Skeleton w={size} h={size} /> : <Image src={src} alt={alt} w={size} h={size} fit="contain" />;
}
