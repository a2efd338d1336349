import { Text, type TextProps } from '@mantine/core';

/**
 * A name people chose, which may be long: one line, cut with an ellipsis where it does not fit,
 * the whole name on hover and for screen readers.
 */
export function LongName({ name, maw = '100%', ...props }: TextProps & { name: string }) {
  return (
    <Text truncate="end" title={name} maw={maw} miw={0} component="span" display="block" {...props}>
      {name}
    </Text>
  );
}
