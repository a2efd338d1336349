import {
  Combobox,
  createTheme,
  darken,
  defaultVariantColorsResolver,
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

/** Secondary ("dimmed") text one shade darker than Mantine's default, for the same contrast. */
export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    // Placeholders ("Any time", "No end date") are read as text, so they keep 4.5:1 too.
    '--mantine-color-placeholder': 'var(--mantine-color-gray-7)',
  },
  dark: {},
});
