// Uploads a file to an lsmgo image host with tus-js-client, as a browser
// or Node program would. Usage:
//   node tus-client.cjs ENDPOINT FILE CHUNK_SIZE [STOP_AFTER_CHUNKS] [UPLOAD_URL]
// Prints "CHUNK offset" per acknowledged chunk, "URL url" once the upload
// exists, and "DONE url" when it completed; with STOP_AFTER_CHUNKS > 0 it
// aborts after that many chunks and prints "STOPPED url". UPLOAD_URL
// resumes an upload made before (HEAD, then PATCHes from its offset).
const fs = require('fs');
const tus = require('tus-js-client');

const [endpoint, file, chunkSize, stopAfter, uploadUrl] = process.argv.slice(2);
const data = fs.readFileSync(file);
let chunks = 0;
const upload = new tus.Upload(data, {
  endpoint,
  uploadUrl: uploadUrl || null,
  chunkSize: Number(chunkSize),
  retryDelays: [100, 500, 1000],
  metadata: { filename: 'tus-js.png', filetype: 'image/png' },
  onUploadUrlAvailable() { console.log('URL ' + upload.url); },
  onChunkComplete(chunk, accepted) {
    console.log('CHUNK ' + accepted);
    chunks++;
    if (Number(stopAfter) > 0 && chunks === Number(stopAfter)) {
      upload.abort().then(() => console.log('STOPPED ' + upload.url));
    }
  },
  onSuccess() { console.log('DONE ' + upload.url); },
  onError(err) { console.error('ERROR ' + err); process.exit(1); },
});
upload.start();
