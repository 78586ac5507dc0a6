/**
 * Tag tables for the `?exif` fop: libexif's tag names (the names Kodo answers with, `exif_tag_get_name`) per IFD,
 * and libexif's wording for enumerated SHORT values (`exif_entry_get_value` in libexif 0.6.24).
 * Tags not listed here are skipped, as libexif drops tags it does not record for an IFD.
 */

/** IFD0 (the primary image) tag names. */
export const IFD0_TAGS: ReadonlyMap<number, string> = new Map([
  [0x0100, 'ImageWidth'], [0x0101, 'ImageLength'], [0x0102, 'BitsPerSample'], [0x0103, 'Compression'],
  [0x0106, 'PhotometricInterpretation'], [0x010a, 'FillOrder'], [0x010d, 'DocumentName'],
  [0x010e, 'ImageDescription'], [0x010f, 'Make'], [0x0110, 'Model'], [0x0111, 'StripOffsets'],
  [0x0112, 'Orientation'], [0x0115, 'SamplesPerPixel'], [0x0116, 'RowsPerStrip'], [0x0117, 'StripByteCounts'],
  [0x011a, 'XResolution'], [0x011b, 'YResolution'], [0x011c, 'PlanarConfiguration'], [0x0128, 'ResolutionUnit'],
  [0x012d, 'TransferFunction'], [0x0131, 'Software'], [0x0132, 'DateTime'], [0x013b, 'Artist'],
  [0x013e, 'WhitePoint'], [0x013f, 'PrimaryChromaticities'], [0x0211, 'YCbCrCoefficients'],
  [0x0212, 'YCbCrSubSampling'], [0x0213, 'YCbCrPositioning'], [0x0214, 'ReferenceBlackWhite'],
  [0x02bc, 'XMLPacket'], [0x8298, 'Copyright'], [0x9c9b, 'XPTitle'], [0x9c9c, 'XPComment'], [0x9c9d, 'XPAuthor'],
  [0x9c9e, 'XPKeywords'], [0x9c9f, 'XPSubject'], [0xa401, 'CustomRendered'], [0xa402, 'ExposureMode'],
  [0xa403, 'WhiteBalance'], [0xa404, 'DigitalZoomRatio'], [0xa405, 'FocalLengthIn35mmFilm'],
  [0xa406, 'SceneCaptureType'], [0xa407, 'GainControl'], [0xa408, 'Contrast'], [0xa409, 'Saturation'],
  [0xa40a, 'Sharpness'], [0xea1c, 'Padding'],
]);

/** Exif sub-IFD tag names. */
export const EXIF_TAGS: ReadonlyMap<number, string> = new Map([
  [0x829a, 'ExposureTime'], [0x829d, 'FNumber'], [0x8822, 'ExposureProgram'], [0x8824, 'SpectralSensitivity'],
  [0x8827, 'ISOSpeedRatings'], [0x8828, 'OECF'], [0x8830, 'SensitivityType'], [0x9000, 'ExifVersion'],
  [0x9003, 'DateTimeOriginal'], [0x9004, 'DateTimeDigitized'], [0x9010, 'OffsetTime'],
  [0x9011, 'OffsetTimeOriginal'], [0x9012, 'OffsetTimeDigitized'], [0x9101, 'ComponentsConfiguration'],
  [0x9102, 'CompressedBitsPerPixel'], [0x9201, 'ShutterSpeedValue'], [0x9202, 'ApertureValue'],
  [0x9203, 'BrightnessValue'], [0x9204, 'ExposureBiasValue'], [0x9205, 'MaxApertureValue'],
  [0x9206, 'SubjectDistance'], [0x9207, 'MeteringMode'], [0x9208, 'LightSource'], [0x9209, 'Flash'],
  [0x920a, 'FocalLength'], [0x9214, 'SubjectArea'], [0x927c, 'MakerNote'], [0x9286, 'UserComment'],
  [0x9290, 'SubSecTime'], [0x9291, 'SubSecTimeOriginal'], [0x9292, 'SubSecTimeDigitized'],
  [0xa000, 'FlashPixVersion'], [0xa001, 'ColorSpace'], [0xa002, 'PixelXDimension'], [0xa003, 'PixelYDimension'],
  [0xa004, 'RelatedSoundFile'], [0xa20b, 'FlashEnergy'], [0xa20c, 'SpatialFrequencyResponse'],
  [0xa20e, 'FocalPlaneXResolution'], [0xa20f, 'FocalPlaneYResolution'], [0xa210, 'FocalPlaneResolutionUnit'],
  [0xa214, 'SubjectLocation'], [0xa215, 'ExposureIndex'], [0xa217, 'SensingMethod'], [0xa300, 'FileSource'],
  [0xa301, 'SceneType'], [0xa302, 'CFAPattern'], [0xa401, 'CustomRendered'], [0xa402, 'ExposureMode'],
  [0xa403, 'WhiteBalance'], [0xa404, 'DigitalZoomRatio'], [0xa405, 'FocalLengthIn35mmFilm'],
  [0xa406, 'SceneCaptureType'], [0xa407, 'GainControl'], [0xa408, 'Contrast'], [0xa409, 'Saturation'],
  [0xa40a, 'Sharpness'], [0xa40b, 'DeviceSettingDescription'], [0xa40c, 'SubjectDistanceRange'],
  [0xa420, 'ImageUniqueID'], [0xa430, 'CameraOwnerName'], [0xa431, 'BodySerialNumber'],
  [0xa432, 'LensSpecification'], [0xa433, 'LensMake'], [0xa434, 'LensModel'], [0xa435, 'LensSerialNumber'],
  [0xa500, 'Gamma'], [0xea1c, 'Padding'],
]);

/** GPS sub-IFD tag names. */
export const GPS_TAGS: ReadonlyMap<number, string> = new Map([
  [0x00, 'GPSVersionID'], [0x01, 'GPSLatitudeRef'], [0x02, 'GPSLatitude'], [0x03, 'GPSLongitudeRef'],
  [0x04, 'GPSLongitude'], [0x05, 'GPSAltitudeRef'], [0x06, 'GPSAltitude'], [0x07, 'GPSTimeStamp'],
  [0x08, 'GPSSatellites'], [0x09, 'GPSStatus'], [0x0a, 'GPSMeasureMode'], [0x0b, 'GPSDOP'], [0x0c, 'GPSSpeedRef'],
  [0x0d, 'GPSSpeed'], [0x0e, 'GPSTrackRef'], [0x0f, 'GPSTrack'], [0x10, 'GPSImgDirectionRef'],
  [0x11, 'GPSImgDirection'], [0x12, 'GPSMapDatum'], [0x13, 'GPSDestLatitudeRef'], [0x14, 'GPSDestLatitude'],
  [0x15, 'GPSDestLongitudeRef'], [0x16, 'GPSDestLongitude'], [0x17, 'GPSDestBearingRef'],
  [0x18, 'GPSDestBearing'], [0x19, 'GPSDestDistanceRef'], [0x1a, 'GPSDestDistance'],
  [0x1b, 'GPSProcessingMethod'], [0x1c, 'GPSAreaInformation'], [0x1d, 'GPSDateStamp'], [0x1e, 'GPSDifferential'],
]);

/** Interoperability sub-IFD tag names. */
export const INTEROP_TAGS: ReadonlyMap<number, string> = new Map([
  [0x0001, 'InteroperabilityIndex'], [0x0002, 'InteroperabilityVersion'], [0x1000, 'RelatedImageFileFormat'],
  [0x1001, 'RelatedImageWidth'], [0x1002, 'RelatedImageLength'],
]);

/** IFD pointer tags (never reported, only followed). */
export const EXIF_IFD_POINTER = 0x8769;
export const GPS_IFD_POINTER = 0x8825;
export const INTEROP_IFD_POINTER = 0xa005;

const RES_UNIT: Record<number, string> = { 2: 'Inch', 3: 'Centimeter' };
const NORMAL_SOFT_HARD: Record<number, string> = { 0: 'Normal', 1: 'Soft', 2: 'Hard' };

/** libexif's wording for enumerated SHORT tags (Exif/IFD0 tag numbers; GPS/Interop are handled elsewhere). */
export const ENUM_VALUES: ReadonlyMap<number, Record<number, string>> = new Map([
  [0x0103, { 1: 'Uncompressed', 5: 'LZW compression', 6: 'JPEG compression', 7: 'JPEG compression',
    8: 'Deflate/ZIP compression', 32773: 'PackBits compression' }],
  [0x0106, { 0: 'Reversed mono', 1: 'Normal mono', 2: 'RGB', 3: 'Palette', 5: 'CMYK', 6: 'YCbCr', 8: 'CieLAB' }],
  [0x0112, { 1: 'Top-left', 2: 'Top-right', 3: 'Bottom-right', 4: 'Bottom-left', 5: 'Left-top', 6: 'Right-top',
    7: 'Right-bottom', 8: 'Left-bottom' }],
  [0x011c, { 1: 'Chunky format', 2: 'Planar format' }],
  [0x0128, RES_UNIT],
  [0xa210, RES_UNIT],
  [0x0213, { 1: 'Centered', 2: 'Co-sited' }],
  [0x8822, { 0: 'Not defined', 1: 'Manual', 2: 'Normal program', 3: 'Aperture priority', 4: 'Shutter priority',
    5: 'Creative program (biased toward depth of field)', 6: 'Creative program (biased toward fast shutter speed)',
    7: 'Portrait mode (for closeup photos with the background out of focus)',
    8: 'Landscape mode (for landscape photos with the background in focus)' }],
  [0x9207, { 0: 'Unknown', 1: 'Average', 2: 'Center-weighted average', 3: 'Spot', 4: 'Multi spot', 5: 'Pattern',
    6: 'Partial', 255: 'Other' }],
  [0x9208, { 0: 'Unknown', 1: 'Daylight', 2: 'Fluorescent', 3: 'Tungsten incandescent light', 4: 'Flash',
    9: 'Fine weather', 10: 'Cloudy weather', 11: 'Shade', 12: 'Daylight fluorescent', 13: 'Day white fluorescent',
    14: 'Cool white fluorescent', 15: 'White fluorescent', 17: 'Standard light A', 18: 'Standard light B',
    19: 'Standard light C', 20: 'D55', 21: 'D65', 22: 'D75', 24: 'ISO studio tungsten', 255: 'Other' }],
  [0x9209, { 0x00: 'Flash did not fire', 0x01: 'Flash fired', 0x05: 'Strobe return light not detected',
    0x07: 'Strobe return light detected', 0x08: 'Flash did not fire', 0x09: 'Flash fired, compulsory flash mode',
    0x0d: 'Flash fired, compulsory flash mode, return light not detected',
    0x0f: 'Flash fired, compulsory flash mode, return light detected',
    0x10: 'Flash did not fire, compulsory flash mode', 0x18: 'Flash did not fire, auto mode',
    0x19: 'Flash fired, auto mode', 0x1d: 'Flash fired, auto mode, return light not detected',
    0x1f: 'Flash fired, auto mode, return light detected', 0x20: 'No flash function',
    0x41: 'Flash fired, red-eye reduction mode',
    0x45: 'Flash fired, red-eye reduction mode, return light not detected',
    0x47: 'Flash fired, red-eye reduction mode, return light detected',
    0x49: 'Flash fired, compulsory flash mode, red-eye reduction mode',
    0x4d: 'Flash fired, compulsory flash mode, red-eye reduction mode, return light not detected',
    0x4f: 'Flash fired, compulsory flash mode, red-eye reduction mode, return light detected',
    0x58: 'Flash did not fire, auto mode, red-eye reduction mode',
    0x59: 'Flash fired, auto mode, red-eye reduction mode',
    0x5d: 'Flash fired, auto mode, return light not detected, red-eye reduction mode',
    0x5f: 'Flash fired, auto mode, return light detected, red-eye reduction mode' }],
  [0xa001, { 1: 'sRGB', 2: 'Adobe RGB', 0xffff: 'Uncalibrated' }],
  [0xa217, { 1: 'Not defined', 2: 'One-chip color area sensor', 3: 'Two-chip color area sensor',
    4: 'Three-chip color area sensor', 5: 'Color sequential area sensor', 7: 'Trilinear sensor',
    8: 'Color sequential linear sensor' }],
  [0xa401, { 0: 'Normal process', 1: 'Custom process' }],
  [0xa402, { 0: 'Auto exposure', 1: 'Manual exposure', 2: 'Auto bracket' }],
  [0xa403, { 0: 'Auto white balance', 1: 'Manual white balance' }],
  [0xa406, { 0: 'Standard', 1: 'Landscape', 2: 'Portrait', 3: 'Night scene' }],
  [0xa407, { 0: 'Normal', 1: 'Low gain up', 2: 'High gain up', 3: 'Low gain down', 4: 'High gain down' }],
  [0xa408, NORMAL_SOFT_HARD],
  [0xa409, { 0: 'Normal', 1: 'Low saturation', 2: 'High saturation' }],
  [0xa40a, NORMAL_SOFT_HARD],
  [0xa40c, { 0: 'Unknown', 1: 'Macro', 2: 'Close view', 3: 'Distant view' }],
]);
