import t from 'tap'
import { chooseDeviceId } from './identity.js'

t.test('the deviceId: configured, else system UUID, else OS UUID, else MAC', async (t) => {
  const all = { configured: 'venue-7-box', systemUuid: '4C4C4544-0042-3510-8048-B3C04F4E3132', osUuid: 'a9f1c0de1e2a4c7b9e8f00112233abcd', primaryMac: '00:1A:2B:3C:4D:5E' }
  t.equal(chooseDeviceId(all), 'venue-7-box')
  t.equal(chooseDeviceId({ ...all, configured: undefined }), '4c4c4544-0042-3510-8048-b3c04f4e3132')
  t.equal(chooseDeviceId({ osUuid: all.osUuid, primaryMac: all.primaryMac }), 'a9f1c0de1e2a4c7b9e8f00112233abcd')
  t.equal(chooseDeviceId({ primaryMac: all.primaryMac }), 'mac-00:1a:2b:3c:4d:5e')
})

t.test('firmware placeholders are not identities', async (t) => {
  t.equal(chooseDeviceId({ systemUuid: '00000000-0000-0000-0000-000000000000', osUuid: '', primaryMac: '00:1a:2b:3c:4d:5e' }), 'mac-00:1a:2b:3c:4d:5e')
  t.equal(chooseDeviceId({ systemUuid: 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', osUuid: 'abc123' }), 'abc123')
  t.equal(chooseDeviceId({ systemUuid: 'Not Settable', primaryMac: '00:00:00:00:00:00', osUuid: 'x1' }), 'x1')
  t.throws(() => chooseDeviceId({}), /set deviceId/)
})
