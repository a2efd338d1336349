import {
  Combobox,
  createTheme,
  darken,
  defaultVariantColorsResolver,
  luminance,
  Modal,
  Notification,
  NumberInput,
  parseThemeColor,
  type CSSVariablesResolver,
  type VariantColorsResolver,
} from '@mantine/core';

/** Light badges and buttons draw their text darker than Mantine's shade 9, which on the pale
 * background of green, orange or yellow stays under a contrast of 4.5:1 (WCAG AA). */
const variantColorResolver: VariantColorsResolver = (input) => {
  const colors = defaultVariantColorsResolver(input);
  if (input.variant !== 'light') return colors;
  const parsed = parseThemeColor({ color: input.color ?? input.theme.primaryColor, theme: input.theme });
  if (!parsed.isThemeColor) return colors;
  const darkest = input.theme.colors[parsed.color][9];
  return { ...colors, color: darken(darkest, parsed.color === 'yellow' ? 0.45 : 0.3) };
};


export const theme = createTheme({
  primaryColor: 'blue',
  // Shade 8 keeps links, filled buttons and coloured text at a contrast of at least 4.5:1 on
  // white (WCAG AA); Mantine's default shade 6 falls short of it.
  primaryShade: { light: 8, dark: 8 },
  variantColorResolver,
  defaultRadius: 'md',
  components: {
    // A closed dropdown would otherwise stay in the DOM labelled like its
    // input, so a lookup by the field's label would find two elements.
    Combobox: Combobox.extend({ defaultProps: { keepMounted: false } }),
    // A number out of range stays as typed, for its form to refuse with the limits: clamping
    // it on blur would send another number than the one the person typed.
    NumberInput: NumberInput.extend({ defaultProps: { clampBehavior: 'none' } }),
    // A dialog's and a toast's close buttons are an icon alone: they need a name for screen readers.
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Close' } } }),
    Notification: Notification.extend({ defaultProps: { closeButtonProps: { 'aria-label': 'Dismiss' } } }),
  },
});

/** The palest background text is drawn on: striped and hovered table rows (gray 0). */
export const PALEST_BACKGROUND = '#f8f9fa';

export function contrast(a: string, b: string): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

/** The lightest of a colour's darker shades that keeps 4.5:1 (WCAG AA) on every background. */
export function readableText(shades: readonly string[]): string {
  const candidates = [shades[8], shades[9], darken(shades[9], 0.15), darken(shades[9], 0.3), darken(shades[9], 0.45)];
  return candidates.find((c) => contrast(c, PALEST_BACKGROUND) >= 4.5) ?? candidates[candidates.length - 1];
}

/** Secondary ("dimmed") text one shade darker than Mantine's default, for the same contrast;
 * and text in a colour (`c="red"`, `c="green"`) in the darkest shade that still keeps it, so
 * that coloured figures stay readable on striped rows. */
export const cssVariablesResolver: CSSVariablesResolver = (resolved) => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    // Placeholders ("Any time", "No end date") are read as text, so they keep 4.5:1 too.
    '--mantine-color-placeholder': 'var(--mantine-color-gray-7)',
    ...Object.fromEntries(
      Object.entries(resolved.colors).map(([name, shades]) => [`--mantine-color-${name}-text`, readableText(shades)]),
    ),
  },
  dark: {},
});
