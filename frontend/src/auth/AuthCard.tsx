import { Center, Paper, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** Centered card used by the screens shown outside the console shell. */
export function AuthCard({ title, subtitle, children }: { title: string; subtitle?: ReactNode; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md" bg="gray.0">
      <Paper withBorder shadow="sm" p="xl" radius="md" w="100%" maw={420}>
        <Text fw={700} c="blue.8" mb={4}>
          GShare
        </Text>
        <Title order={2} mb={subtitle ? 4 : 'lg'}>
          {title}
        </Title>
        {subtitle && (
          <Text size="sm" c="dimmed" mb="lg">
            {subtitle}
          </Text>
        )}
        {children}
      </Paper>
    </Center>
  );
}
