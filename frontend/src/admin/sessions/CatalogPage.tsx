import { Badge, Button, Group, SegmentedControl, Stack, Switch, Table, Text, Textarea, TextInput } from '@mantine/core';
import { useForm, type UseFormReturnType } from '@mantine/form';
import { IconDeviceFloppy, IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import { useAddImage, useCatalog, useUpdateImage, type ImageOut, type SessionType } from '../../api/hooks/sessions';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { QueryState } from '../../ui/QueryState';
import { SESSION_TYPE_LABELS, SESSION_TYPE_OPTIONS } from '../../sessions/sessionParts';
import { FormModal } from '../../ui/FormModal';
import { PageHeader } from '../../ui/PageHeader';
import { IMAGE_FIELDS, imageFields, LIMITS, NEW_IMAGE, validateImage, valuesOf, type ImageValues } from './catalogForm';

function DraftFields({ form }: { form: UseFormReturnType<ImageValues> }) {
  return (
    <>
      <TextInput label="Name" description={`Up to ${LIMITS.name} characters`} {...form.getInputProps('name')} data-autofocus />
      <TextInput
        label="Image reference"
        description="Registry, repository and tag or digest"
        spellCheck={false}
        autoComplete="off"
        {...form.getInputProps('reference')}
      />
      <Textarea
        label="Description"
        description={`Optional; shown when a user picks the image. Up to ${LIMITS.description.toLocaleString('en')} characters`}
        {...form.getInputProps('description')}
        rows={3}
      />
    </>
  );
}

function AddImageModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const add = useAddImage();
  const form = useForm<ImageValues>({ initialValues: NEW_IMAGE, validate: validateImage, validateInputOnBlur: true });
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="Add image"
      submitLabel="Add image"
      submitIcon={<IconPlus size={16} aria-hidden />}
      form={form}
      initialValues={NEW_IMAGE}
      serverFields={IMAGE_FIELDS}
      onSubmit={(values) =>
        add.mutateAsync({ session_type: values.sessionType, ...imageFields(values), enabled: values.enabled })
      }
      done={(values) => `Added ${values.name.trim()} to the catalog.`}
    >
      <div>
        <Text size="sm" fw={500} mb={4}>
          Session type
        </Text>
        <SegmentedControl
          aria-label="Session type"
          value={form.values.sessionType}
          onChange={(value) => form.setFieldValue('sessionType', value as SessionType)}
          data={SESSION_TYPE_OPTIONS}
        />
      </div>
      <DraftFields form={form} />
      <Switch label="Offered to users" {...form.getInputProps('enabled', { type: 'checkbox' })} />
    </FormModal>
  );
}

function EditImageModal({ image, opened, onClose }: { image: ImageOut; opened: boolean; onClose: () => void }) {
  const update = useUpdateImage();
  const form = useForm<ImageValues>({ initialValues: valuesOf(image), validate: validateImage, validateInputOnBlur: true });
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title={`Edit ${image.name}`}
      submitLabel="Save"
      submitIcon={<IconDeviceFloppy size={16} aria-hidden />}
      form={form}
      initialValues={valuesOf(image)}
      serverFields={IMAGE_FIELDS}
      onSubmit={(values) => update.mutateAsync({ imageId: image.id, body: imageFields(values) })}
      done={(values) => `Saved ${values.name.trim()}.`}
    >
      <DraftFields form={form} />
    </FormModal>
  );
}

function ImageRow({ image }: { image: ImageOut }) {
  const update = useUpdateImage();
  const [editing, setEditing] = useState(false);
  return (
    <Table.Tr style={image.enabled ? undefined : { opacity: 0.7 }}>
      <Table.Td>
        <Text size="sm" fw={500}>
          {image.name}
        </Text>
        {image.description && (
          <Text size="xs" c="dimmed" lineClamp={2}>
            {image.description}
          </Text>
        )}
      </Table.Td>
      <Table.Td>{SESSION_TYPE_LABELS[image.session_type]}</Table.Td>
      <Table.Td>
        <Text size="sm" ff="monospace" style={{ wordBreak: 'break-all' }}>
          {image.reference}
        </Text>
      </Table.Td>
      <Table.Td>
        {image.enabled ? (
          <Badge variant="light" color="green">
            Offered
          </Badge>
        ) : (
          <Badge variant="light" color="gray">
            Disabled
          </Badge>
        )}
      </Table.Td>
      <Table.Td>
        <Group gap="xs" wrap="nowrap">
          <Button size="xs" variant="light" onClick={() => setEditing(true)}>
            Edit
          </Button>
          {image.enabled ? (
            <ConfirmButton
              label="Disable"
              title="Disable image"
              message={`Disable ${image.name}? New sessions can no longer choose it; running ones keep it.`}
              confirmLabel="Disable image"
              color="orange"
              onConfirm={() => update.mutateAsync({ imageId: image.id, body: { enabled: false } })}
            />
          ) : (
            <Button
              size="xs"
              variant="light"
              color="green"
              onClick={() => update.mutate({ imageId: image.id, body: { enabled: true } })}
              loading={update.isPending}
            >
              Enable
            </Button>
          )}
        </Group>
        {update.error && !image.enabled && (
          <Text size="xs" c="red" role="alert" mt={4}>
            {errorMessage(update.error)}
          </Text>
        )}
        <EditImageModal image={image} opened={editing} onClose={() => setEditing(false)} />
      </Table.Td>
    </Table.Tr>
  );
}

/** The images sessions start from, disabled ones included (super admin). */
export function CatalogPage() {
  const catalog = useCatalog(true);
  const [adding, setAdding] = useState(false);
  const items = catalog.data?.items ?? [];
  return (
    <Stack maw={1200} gap="lg">
      <PageHeader
        title="Session catalog"
        description="The images users can start sessions from, by session type."
        actions={
          <Button leftSection={<IconPlus size={16} aria-hidden />} onClick={() => setAdding(true)}>
            Add image
          </Button>
        }
      />
      <QueryState query={catalog} isEmpty={items.length === 0} empty="No images yet. Add one so users can start sessions.">
        <Table.ScrollContainer minWidth={900}>
          <Table striped aria-label="Catalog">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Image</Table.Th>
                <Table.Th>Type</Table.Th>
                <Table.Th>Reference</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((image) => (
                <ImageRow key={image.id} image={image} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </QueryState>
      <AddImageModal opened={adding} onClose={() => setAdding(false)} />
    </Stack>
  );
}
