"""Where every corpus `kbc data download` fetches comes from: each file's upstream repository, commit and path, its
SHA-256 and size, and where it lands under the data folder (the layout the loaders read, as `eval.datadir` and each
loader's `resolve_*_dir` look for it).

A table of data: a file is put in place only when its bytes hash to the digest pinned here, so a moved branch, an
edited upstream file or a tampered mirror cannot change what a run reads. LAMA's release is one archive whose digest
is not pinned (it is printed and stored beside the data, and `--sha256` pins it); the vocabularies LAMA's probes rank
over are pinned files.
"""

from __future__ import annotations

import os.path
from dataclasses import dataclass

RAW = "https://raw.githubusercontent.com"
LAMA_URL = "https://dl.fbaipublicfiles.com/LAMA/data.zip"
MIRROR_ENV = "KBC_DATA_MIRROR"  # a base URL that holds every upstream file at HOST/PATH


@dataclass(frozen=True)
class PinnedFile:
    dest: str  # path under the data folder
    url: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Origin:
    """Files of one repository at one commit, from one folder there to one folder under the data folder."""

    repo: str  # owner/name on GitHub
    commit: str
    source: str  # folder in the repository ("" for its root)
    dest: str  # folder under the data folder
    table: str  # one `NAME SIZE SHA256` a line; NAME is relative to both folders
    renamed: tuple[tuple[str, str], ...] = ()  # (NAME, its name upstream) where the two differ

    def files(self) -> list[PinnedFile]:
        upstream = dict(self.renamed)
        out = []
        for line in self.table.split("\n"):
            if line:
                name, size, sha256 = line.split(" ")
                path = "/".join(p for p in (self.source, upstream.get(name, name)) if p)
                url = f"{RAW}/{self.repo}/{self.commit}/{path}"
                out.append(PinnedFile(f"{self.dest}/{name}", url, int(size), sha256))
        return out


@dataclass(frozen=True)
class Archive:
    """A release archive unpacked into one folder; `marker` is the file that says it is unpacked."""

    url: str
    dest: str
    marker: str
    sha256: str | None = None


@dataclass(frozen=True)
class Source:
    name: str
    what: str
    licence: str
    origins: tuple[Origin, ...]
    archive: Archive | None = None

    def files(self) -> list[PinnedFile]:
        return [f for origin in self.origins for f in origin.files()]

    @property
    def size(self) -> int:
        """Bytes of the pinned files (an archive's size is not known before it is fetched)."""
        return sum(f.size for f in self.files())

    @property
    def where(self) -> str:
        """The folder under the data folder that holds all of it."""
        paths = [f.dest for f in self.files()]
        if self.archive:
            paths.append(f"{self.archive.dest}/{self.archive.marker}")
        return os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])


SOURCES = (
    Source(
        "lama",
        "LAMA (T-REx, Google-RE, SQuAD, ConceptNet): the official release archive, plus the common vocabularies",
        "CC BY-NC 4.0",
        (
            Origin("princeton-nlp/OptiPrompt", "9450bc96f28ac3df01337c79be079a2ac3defb5c",
                   "common_vocabs", "lama", """
common_vocab_cased.txt 161894 81e6879ca2f794256a5a97f79def6b230dd314bf127f13aeb8f8f42d6f4a21df
common_vocab_cased_be_ro_al.txt 166817 44380080ff08ca64de6efe566ef82d497ff81416bf3c1a472a99b2f427c043f6
"""),
            Origin("kowndinya-renduchintala/LAMA", "fa89ac01a4c0fa5b46ea57e74db52087b3d7aaa3",
                   "pre-trained_language_models", "lama", """
common_vocab_lowercased.txt 129986 5dde169036118f750570dcccc759457b3a810a5d081961a991b99aa96917e5c8
"""),
        ),
        Archive(LAMA_URL, "lama", "relations.jsonl"),
    ),
    Source(
        "bear",
        "BEAR: 60 relations, 7,731 multiple-choice facts (lm-pub-quiz)",
        "no licence file; Wikidata facts (CC0)",
        (
            Origin("lm-pub-quiz/BEAR", "3818fdc029d335b603631255c135d2a87b0bd24d",
                   "", "bear", """
BEAR/P103.jsonl 25624 b11e836eead333ab0c8c14af4f0d2c749359f46edb94729571ad94b4b1c7fd75
BEAR/P105.jsonl 21244 e984dbc295cc48419a7a3012f64f8939b39c02b2db611cb60c3c2cf82662ba6a
BEAR/P108.jsonl 26561 37794938802f0db434c0bd6b6df56aeebe5c1acd212a1640fa3af1536327b879
BEAR/P115.jsonl 12070 3d505b0625fc9ebae01cda228f35ca43b56f7303db0e73480401016e16d1373f
BEAR/P127.jsonl 23278 d5a1e69acee8bd9506ce60c9db1d421303f02f97850cf2c221eddbcd401c9de7
BEAR/P1303.jsonl 22608 6c70d12403a218e4c125d3c290a2752dda67969b9ff45fc492a82897e4dba873
BEAR/P131.jsonl 20976 d192bc1668ae4065dc6b367071ae8dee0de48480207c0913fc7f96cb28c8aba7
BEAR/P137.jsonl 23775 2584df42c093af5c7a6967a4bb896847ca4027d320bf846b33c5f83d3544368a
BEAR/P1376.jsonl 9251 432e4bad0b89193780cbc0f61ee57dba266d560feb991900252b63ec7b350e63
BEAR/P1412.jsonl 30724 6c45c7ddb795a8d774ad46e93257f38f6bae6342057449682b992293e6a3df26
BEAR/P1441.jsonl 20869 b9990ad76a3902861f69049b1a972e1f109ac0e3776d439501999f81d241d277
BEAR/P1532.jsonl 23096 572ebe8692eab54d40e8426519d862581af1e00252f237329958b1b65a3e8a66
BEAR/P162.jsonl 20062 f87c5cd4aeb179250cb8d222ee805dfcec7d313eec7d86c81511b1a68ed789c5
BEAR/P170.jsonl 24013 6947e82ba0b000b75759261da1d9d6f9398e5bb8437a60ecc22e74fa4bf3c88a
BEAR/P171.jsonl 18756 5b9dc5d3ae9aa17d19d24b5dc93f3fc0ee30319f5149ffed168dc8e0424ef54f
BEAR/P175.jsonl 19897 9c199a2601953518138f2176eb5133ad72dd42d2aa1600c1622a726a62f9d352
BEAR/P176.jsonl 23054 a163601f70c159a29beea17649470ab402d1c82e7ed4aa70cbdebb7f5950222f
BEAR/P177.jsonl 21981 2617927e5d01736e6c0b9c76d6c0b76526b44bc85c75103b87e81e7467e4d503
BEAR/P178.jsonl 22202 8211500770aa141f1f1387e4321946890d5829f209e12223d512a0c8c51742c6
BEAR/P179.jsonl 20277 5fc9582a9d63b744e2bb3347c800823e85027378382d6494a5edda6d87ffc8c9
BEAR/P185.jsonl 10187 db72023cc7a695786186bba79636a1031ea42d530adf1f6cbcf36ec359658ae1
BEAR/P19.jsonl 20741 9e46f6a857dc310c55eca994afb4185e0e5fea9b473853102fd21e9b4d7681d2
BEAR/P190.jsonl 7975 9c6eff20fae7bcf0443ed3e9b645b5c0b1dcb52fde5424ddfb4024041aeb1259
BEAR/P20.jsonl 21625 be5ec35aa397c13f5afbff1d544f6a809955883d6e4ad18f20861bbea9b86c30
BEAR/P206.jsonl 22614 78cbc6bb636524e342457fd9d1bacb301186b38f93e94a5bcf567981264fb7c5
BEAR/P26.jsonl 10718 f5eb625886b3cfe1db4b7e44aad145c95137e5afde726210ee5ecbd2c9b780b8
BEAR/P2632.jsonl 24603 1f9dd226ac586d4abae1960725b72dbd339795086354b69aae187cf53dda3461
BEAR/P27.jsonl 26025 3b10871f460d2c0327f0f0338f180582fdf67f18b890d23b3fbe0f5e4f8c4c14
BEAR/P272.jsonl 21365 c6bc8af776b87ca5628227ec757b59355cb709d4624ee62035e7922ec0b00191
BEAR/P291.jsonl 20541 699fb201bea6bc69b8010f546ee76b52b90fa5465e57f9dcf819288861919c28
BEAR/P30.jsonl 27647 e63938f003ba9f65faf4b6156d86e0326240e47ee9b9a8d8e2a66bc5e39a0264
BEAR/P3373.jsonl 9457 48277edbcb235ce525c8cba646ebab474156043530ad5876374b609855da7927
BEAR/P344.jsonl 21995 5de8903d9b731c8bfe8bc4bd80585328556fc616c2fa909612de4074339aba04
BEAR/P36.jsonl 10260 7734af16de888da0f48e6bfda73cf95d6623437df7f830d8eb9c25ebadd7fba6
BEAR/P364.jsonl 20252 79e413977f823e98b6983bf177845d37845d1b0c0a6ae1dbc57e25134c02ee98
BEAR/P37.jsonl 9241 8fc416a87a54060def9f0610d9809ea3b5df43d53bdca6ab02be3df52f323005
BEAR/P403.jsonl 18765 20f61ea85eaaa683b62895648d27db1984f282e764c7def92f6a0d62ebebbb04
BEAR/P412.jsonl 23971 07f7b9b97692ac90026bc3011f3841eb1e9a88a92a20006b71b40df4761b75d2
BEAR/P413.jsonl 24402 5d1827850c3cbaf112d030ec49ddb96edd5220350812429ae864da42fa22df6a
BEAR/P427.jsonl 7910 a871a456672e7c62f4bffb29731c33e53ef6ed4db96db91e47616f992685028f
BEAR/P449.jsonl 21214 20837621fcec23f2f70cc20bde618a3cb2350c7a3d41eac80188bbb70b19bf2b
BEAR/P4552.jsonl 20065 3b355433eb338600e3b1194dc8575d0bed762af4ff31a4b81c6eff18da3a407f
BEAR/P463.jsonl 26760 f9799a2d2abe7f818406b7a5178a9a9045c0d79313c5854d585641090074d97a
BEAR/P466.jsonl 9205 af7bb663ea0904ddf057bb16a5e2817113da4f17342f9e16cb81c3566f07b7d0
BEAR/P50.jsonl 22261 00addaa0dc43d885ba556a2f08c27a2d90bc5b9a839e1ac18d311c96828b9aca
BEAR/P509.jsonl 32132 6a300de80a2dabdfc08636e853a51543c3f44d803f0e21cada65c23231dd0c38
BEAR/P53.jsonl 35414 7be15895687cea2462c3243851af85cafee7ec8fc0f1d70f00fa166f6a99c803
BEAR/P57.jsonl 21282 e6da0902e7c7de1d4354e928b4139280cb86efa4cee743b4c0a8ae5a0c155eec
BEAR/P58.jsonl 22751 406ff37b60bf3cb02d9703c45a934531e3607689030ca15cddc4a0f7eedcd8dd
BEAR/P6.jsonl 11511 e007d6d9bcc75d970891c4590582c34ff359084627463cc4e47e8e597d0d399a
BEAR/P610.jsonl 10892 7807d53c6d35a2a543d5d47833a76414c08932cb765abbab0ad68a9f4ca870b4
BEAR/P611.jsonl 33275 c611947d707060a1590b4c031941fd62057444085e9d05c9d93bcc44bcf99bbd
BEAR/P641.jsonl 23506 91155f6a666154367e6e06975903d693a07555cf7371f623ce4554e89ea8f5d5
BEAR/P676.jsonl 19680 d6bd0a15f135ac282b3effeff4f0c94fe878164fde2208bcb5dc9d95d70dd919
BEAR/P6886.jsonl 26099 9a9155db44da4881abf7272df8fc560bbe79d8d6c2396caabfd86d42617c5b02
BEAR/P69.jsonl 29540 f244230e8d009e12d2953715a055a999726d008dece2d8f2cba838777a687b96
BEAR/P7937.jsonl 21656 87b814f38c7ab10f0803c569adbf7eb86e4d9f0cf4d5957800d48a396c852857
BEAR/P7959.jsonl 21843 5fb418e17a8876074abb24eb1e2ec56ac10be033ab9698da5d4cac3c360bf68a
BEAR/P87.jsonl 8452 b1139764a3d530a7aa5b37c7b93cd4f8ecc0f7c884172f16da7e25e25a51cb0a
BEAR/P98.jsonl 8926 b7926d7a12801f83ae42735c037b099085ecdb04f4de41aabd7555d6fe92b02c
BEAR/metadata_relations.json 112916 2e5bf0645cd2bf1eb5533664a23a962cebf733ba4255f461d942c26e2ad3d8ab
README.md 843 30aec0e9dab2364543fd2309ea8311681a81986a80bf9cae01877774baa877a7
bear_lite_indices.json 100061 f6e916939726f0b8ef64f8e24c735f1c27ef8df7bdabde563618761499fead14
relation_info.json 3211 efb941d432da73cb2459eb33cc3ba5546356fb4b67347f3cf23be1d9afc9c1e5
"""),
        ),
    ),
    Source(
        "bear-big",
        "BEAR-big: 78 relations, 40,916 multiple-choice facts (lm-pub-quiz)",
        "no licence file; Wikidata facts (CC0)",
        (
            Origin("lm-pub-quiz/BEAR", "3818fdc029d335b603631255c135d2a87b0bd24d",
                   "", "bear", """
BEAR-big/P101.jsonl 97965 351113c6bb265860e1c0f2316d9f2b4fd7c84ab714ba090de29912b23e40fb96
BEAR-big/P103.jsonl 85009 9567cb5d9efa16719ffa5b2274d3a0446ce74292568cd6bc60fc72f2eab2ee6a
BEAR-big/P105.jsonl 76222 553947e0ee47052a5c76043c486d138bc96348ad7b2b6fcf23b235f66d1962fc
BEAR-big/P106.jsonl 79165 2014a20c47b9ddb58419e39b4fdb5bab40326de2b0cfb3af529a9ef6c6821670
BEAR-big/P108.jsonl 87114 8f79e71d8c144d2c887d2e51480d34467d03a3f3448bb2f853b9f372eeec42a2
BEAR-big/P115.jsonl 36657 88b79e9ee86b7bfcfcfa435d34c6aa679fa0c1a7c5035a2fa712e523fcf5dfc4
BEAR-big/P127.jsonl 80687 ba2b0b0f8eecd3712799a152ea2f11e36ba50aeb0a9497a3558fa38226b76f26
BEAR-big/P1303.jsonl 78603 03182a98b96e3117eb9dff140e827f6da2a05bd0fe9c3658b80bca6a0a5e0027
BEAR-big/P131.jsonl 71324 472083d1535de2cdbffadff64ce5f325992fa990496dc2bb973984f071a48de0
BEAR-big/P135.jsonl 132134 bb3288a06738702d4ced7897375d071c1301fe8cc6edb2ae7679bfcd3e28b22f
BEAR-big/P137.jsonl 76320 112970c73a019b697cee0c365af5c67638c4c0b4755b50025f9cf0eee2a349bf
BEAR-big/P1376.jsonl 28509 7612716eb294c623030a27dd70239c526eeeae878ce9a1e4605dd9f6a54bd4f4
BEAR-big/P141.jsonl 92470 9fd670817a8de4ea345d64cbb92dbbf18827d9f2513c756481968c114cbb2a39
BEAR-big/P1412.jsonl 87713 b1d0ea0e1cb6ec7fe02fce3e382f054b610f37ad326b25ca18e436d3587f7152
BEAR-big/P1441.jsonl 70266 6bad7c2815c8931a9cc67c06c83c2060343492b206b478e3cffd289257eed8b4
BEAR-big/P1532.jsonl 76660 fc7e962ed5663640b5c7224128c625f44cb09688364c3b387be6cdc7b6e47d86
BEAR-big/P162.jsonl 75290 ef8ebded6e472f2aec91a8b70448ef99a5b8522ec971ef095cd48a073c6e1564
BEAR-big/P170.jsonl 82727 4e9f855c3a39c6ebccc558e1374a452248ee4ed8c072e57ce1438316d2a755e8
BEAR-big/P171.jsonl 63034 6257260a826c4db5cf39ac40563faf34cb8ad658aa349aa82b5fbfac92f2e148
BEAR-big/P175.jsonl 71161 6b86f237b461855f9a9f2f18f899a6df68a5155267f847ef46fd22c97aa23b90
BEAR-big/P176.jsonl 76823 f5fba53b40fafff736cb9a9b7e69a6e37ad181af98f4fcde5f3855de0b949f1c
BEAR-big/P177.jsonl 72292 c044ca566dc9e68db78a74a182946365ae1e57436103a1320b8ae214aa050e05
BEAR-big/P178.jsonl 78616 749617c070ad9575f8345d00d2dc7d41052c893d43316105ca31f3107dad6e53
BEAR-big/P179.jsonl 74536 5b91ed6455d9b6bb3a90d08a4568dee826c2f4565a246fd5a05e280011b85928
BEAR-big/P183.jsonl 77104 9ba3833024715db5c3357fa4191d9d48a25b7cf27bfada25cd10fb983568b575
BEAR-big/P185.jsonl 28576 8d0eae302c47553a9334fffc66bfd8e6ef3db988f4844a0e6bbe26a2dcbac299
BEAR-big/P19.jsonl 72240 ab9d333866512e83259ffdd021e1873a28bacfd6f02973678318010071212b54
BEAR-big/P190.jsonl 23373 e471b4038e4672f6b17a9618f17734d3ec5393279c366552ba75f84750edda72
BEAR-big/P195.jsonl 84213 093ff93f349a64d284dc61924a2cd6edd7999ee3437c3fc5dbc0365d4a676962
BEAR-big/P20.jsonl 73888 512c4b120fddf56bfddb05b38a882401ec18fc280fc39bfa744e83836df29283
BEAR-big/P206.jsonl 76141 5464b8d3fd5a142dd10601bc8d0d2a6caae7f7e7cdff7cf8a777792a0538f139
BEAR-big/P26.jsonl 30903 f19d1f3028b199c9dabbd86ca79f8ed1083e30fb01c7d6cb2e8b2c2328b30b4d
BEAR-big/P2632.jsonl 89364 81bf85c923c99157431d295845672b0f50cf04fa4a835f0a599d8c9c8f89909e
BEAR-big/P264.jsonl 74012 60706296e3a0f8546fbb7e2e06dc5f714ee3b7477c5ad5bac193f3c6c13b84b1
BEAR-big/P27.jsonl 84552 27d89b9d8e17b9d663b373845aa51c6b9f69e94e4de8e92616f534b412c5e478
BEAR-big/P272.jsonl 77296 0bf73f1990863fe7ba569e69e4219b1439abec7d1b3279850e12181bce25dfb6
BEAR-big/P291.jsonl 73331 4b2fe2e67f80362436a2a861a726599fc3775367912747a7903021dc1967ddcc
BEAR-big/P30.jsonl 84242 9df91b953276099790e186f5e50872162bf02fa8f1646dcd215906a887a250dc
BEAR-big/P3018.jsonl 81044 349f5ea7440bcd79d691ac27301bf7295b980c3fab130bdf5ef84a918e9e1304
BEAR-big/P3373.jsonl 27915 42703c0ae2356ddc82adb076fd99c6abbe0b2113b58780849923f37f4d8897dd
BEAR-big/P344.jsonl 77946 48b295be5529efd8b3f985be318511addbe990b76bba9fc2f17f75ae21459ec6
BEAR-big/P36.jsonl 31069 54f3a0601b5bace64219f3fe0751fad5f58e34f65d607417b3c61958506dcfbb
BEAR-big/P364.jsonl 72369 f47fdfd4d1ae0e6fc2fe48cf0e8c20db33da3cc87456353623e69e6a5ac09fce
BEAR-big/P37.jsonl 27528 129d4d6c4715d4edc0cb69a2bb38ad2377536013399ff17a938ba613c638ce31
BEAR-big/P39.jsonl 86159 3bf0fc73648ccef87e6c0c8d9cc587692d0a8bce9dd67637444aeab2d937cc38
BEAR-big/P403.jsonl 69723 ae750587e0b26761c9e8321a121ab2b50930f32737367b11e6a9d995df6e4b3c
BEAR-big/P412.jsonl 81369 30eb00de22f110be9e754869e60173c1502aaeabf4f23196464ba7845a27acff
BEAR-big/P413.jsonl 82739 3e87a7b20ff951037a2eb699d5bc3c93dbda5af2c900ffc3ce43246b21bc48e6
BEAR-big/P427.jsonl 22139 0abb3c9417343f569f598abbc7b681b757fd2c5207df8868db10a439270b4b3f
BEAR-big/P449.jsonl 70591 cff71e46b3b95e695104e98eb094ba73cefcb5eee3277d4cb863ff4f0df608b7
BEAR-big/P4552.jsonl 70086 2364bc3f6c47b569cf8a8384b4bde54ae54075876158510a331694b87e93d27c
BEAR-big/P463.jsonl 90269 b79d2c5567e0a0507a6b5e3230d41b0a211a5dd4dc51fc9ec463f8aa795969c0
BEAR-big/P466.jsonl 26753 b45cb78d11cdc8d36b658af5863bbf48d89647c4baa04e0c95aff170d088e003
BEAR-big/P495.jsonl 71032 fe3bf0da7c41ca8cb326ad646ba47cf24d14ea66a21500dc91b8c5756db0a92c
BEAR-big/P50.jsonl 76947 23011a3602c7bc1e652231b8e6fe6a8c13c89ab35b3dc931afbdeccb7e334736
BEAR-big/P509.jsonl 115276 c699af3642f5faeddc77f81955df6b403bf71a0ec4b09a0cdbfc1fea9557b2cb
BEAR-big/P53.jsonl 98753 898eaf4e72b183ace0553ccc8accf240af0e0f802c0e8ff3da7124509dff0d30
BEAR-big/P57.jsonl 75161 2ffc1fd6d4720ca975ea3795c5f4dcf733fde9a4aed44e551dec21db3dff0fbd
BEAR-big/P58.jsonl 82280 f82d760c76f4893785aadcc8a502e724fe7a87df5857b643b5f8b571bafc74d3
BEAR-big/P59.jsonl 65250 c117c9ef6d1e433db3e2662bdbb684a0284a800b60502d8bf413a041945a837c
BEAR-big/P6.jsonl 34090 3df5997255e9c53529af0cbb8fded89e47cebc2d7187cdacca0c5e04acba4688
BEAR-big/P61.jsonl 83189 3d158e3c2eaeaad7c44f2d3c2b764e4549a2ca258be8acd6ad85b4fd0b06feec
BEAR-big/P610.jsonl 32489 cc4afb831803144b72f9ad8fc81e2bdfb5972f3a4ca4c4e63c4e7787d314da10
BEAR-big/P611.jsonl 100071 615dfe77fb36f7b24484c1e01a30fde8b68bff6beccb8f54b38c2c009033b336
BEAR-big/P641.jsonl 79196 da9fca19377b905c02d929f417746d8934d852c9759f9c1c5222e81c28058f81
BEAR-big/P65.jsonl 84383 a5a8228664c36b53dafa13a30db8172d8937f706861e4e21c4b836e7dc59f0a7
BEAR-big/P669.jsonl 86328 fdd2dbcfe0c6fdec1d525a5749d356bad64dcf3683b681573958353ce5ce194f
BEAR-big/P676.jsonl 70169 f46348519eb7360c36639cf133b5439fcfe6d4583b2cebcb29107f859ccc4939
BEAR-big/P6886.jsonl 91527 105c461e5d24218f69d25982766b313acbd37f8139a89663d4aaee9dc93e49f2
BEAR-big/P69.jsonl 90675 17acdacb50e1daabe476ac90a626b8a3faef9f5e490a439c305fedee2571d1cb
BEAR-big/P7937.jsonl 77441 c13c87a7efdd5f844b15f5233a41cfecf7d36292ba59540588c6291fcd3c8d95
BEAR-big/P7959.jsonl 74131 c5d6101d878ccf250dfa573881ade2ffcb70ebca58f9662900bf132fe24aee24
BEAR-big/P81.jsonl 79720 b4a045c28eb2647e2971902a3245cf05b5fec047986f2fdf222312f0c18a5a90
BEAR-big/P86.jsonl 79994 a87dadf21ffa7bf6311c1b92a77700511358d3b451a6fbc2f9548af8c6d6df0d
BEAR-big/P87.jsonl 24989 ebdff24207541be79d6da89429b78e7a03ccde1b0e5598a9cdeda71c1165dc88
BEAR-big/P945.jsonl 89101 3c978cb237b53246501cc63a91010a70c5f8f41b6dca8472481b77b791be8f4a
BEAR-big/P97.jsonl 94502 074463b53fd2d505afad88acc83c64c3ed7e1701ce729aaee9ad50cc0d2af0da
BEAR-big/P98.jsonl 27138 e7933890f7e9689589bdea20d6621f53538e616eb8690ebe24b170ab0fcb8585
BEAR-big/metadata_relations.json 14818 87e5f2ddfb9a633ff88dd3bf42b43462105492e763760155dcab116b64829c12
relation_info.json 3211 efb941d432da73cb2459eb33cc3ba5546356fb4b67347f3cf23be1d9afc9c1e5
"""),
        ),
    ),
    Source(
        "lmkbc2024",
        "LM-KBC 2024: set-valued facts of 5 relations, train and val, with prompt templates",
        "CC BY 4.0",
        (
            Origin("lm-kbc/dataset2024", "bc7e017791d7c78fadf6b5159a27f10e9add12f8",
                   "", "lmkbc2024", """
prompt_templates/masked_prompts.csv 397 e42e60a56a6a7482a34c9b87e6694aa177e065ac5f374f270a301933e096d1f2
prompt_templates/question_prompts.csv 366 3f8fc241be4743046bc686491dc9dd9c02d43bb0f6825cebf5c38314efb427d1
"""),
            Origin("lm-kbc/dataset2024", "bc7e017791d7c78fadf6b5159a27f10e9add12f8",
                   "data", "lmkbc2024", """
train.jsonl 87482 f92789e2cd9f369565484379ee0c521fff76703364774c452a7b5bbd7a79f467
val.jsonl 111459 c20fec448f3637ead2750d00b62d50e63de2f41dc8a4749f9b51994a042a222a
"""),
        ),
    ),
    Source(
        "negated-lama",
        "negated and misprimed LAMA (Kassner & Schuetze 2020)",
        "no licence file; derived from LAMA (CC BY-NC 4.0)",
        (
            Origin("norakassner/LAMA_primed_negated", "095ed135ae3b32cc71de309c2710288724506113",
                   "data", "negated_misprimed_lama", """
ConceptNet/high_ranked/ConceptNet.jsonl 39697 32eb3286c2a9e486af66341f27215034da5a21d15d0e8a7319960dcb45c815a7
ConceptNet/low_ranked/ConceptNet.jsonl 39797 2ba1b71b9b9c2c46f71c573dd36e4f2ed5d4c97967cd23daea108dc00d67d238
ConceptNet/random/ConceptNet.jsonl 39966 b2d5a33f3d1737923e2a918e168762773bedbb212f69353e1bc68faaa6fe5340
GoogleRE/high_ranked/date_of_birth.jsonl 5975 f6be2bb3c5836def764ef7783818d95e64dd78f1682aa56ecc3ddb3207fb34b3
GoogleRE/high_ranked/place_of_birth.jsonl 118711 4f016e846805868ddbf1415ee783b233dfbb7ce1e433f1cc0b855a38326f5289
GoogleRE/high_ranked/place_of_death.jsonl 26654 4e49f1500a223b429f4e093b41424f1baf2e393288a3895a1288b19965b3ab11
GoogleRE/low_ranked/date_of_birth.jsonl 5739 a1d9eac3241c21519ecbab31e323719e66c417a65783a19b33676d450182d11b
GoogleRE/low_ranked/place_of_birth.jsonl 115620 34681c3e27a1f71a463cd0f0282e975b1d4d4decbdab65882bc3f5beebf94151
GoogleRE/low_ranked/place_of_death.jsonl 25665 9369b6eedd42ec8eb6a7c33027af9da6c136fbeb3919efa964e2f1e7dced4a6b
GoogleRE/random/date_of_birth.jsonl 6061 7d893be1534db6016c0b3ae454a0cc1160a546296f06e267d5afcdcf307ae823
GoogleRE/random/place_of_birth.jsonl 119121 6e3c36faf520ff492f53999dd0df644a4f2a09b9d5e0f0f6653bfb4c305b4b6d
GoogleRE/random/place_of_death.jsonl 26790 b6540f6bc723b33db81e6dc000d591b4f4730190accd83284e7b43f4254ba814
SQUAD/high_ranked/Squad.jsonl 18866 8cea05264ef031ad548b3552d5863983510d6cea279bb9446cd16ce26177bc01
SQUAD/random/Squad.jsonl 18952 f9f4016653035553bcd8e5bbd2bcf5b9cf61cc79587f122436d40e8e663eac32
TREx/high_ranked/P1001.jsonl 167095 d32cf68a23a1bd552fb199186d2ccee9ca53fc64f32c13e3ee582236aa23f4a5
TREx/high_ranked/P101.jsonl 25189 905a1f0d8adcc781940c6da3cc3191edb3992c17d4c85a381ef34bcc794ec5b7
TREx/high_ranked/P103.jsonl 239226 23a802de0665cc24922642bb8fdde7f225215baa516108bdbe3242b3fc9f3cb7
TREx/high_ranked/P106.jsonl 1797 0869654a9377427844b2b54df3a46ea219f905dd8c9b0ef7332e786ff0eaa234
TREx/high_ranked/P108.jsonl 1558 15e8704b5a027c84666ca6203827396abd0314d8c4963265b97f35192ca94b8f
TREx/high_ranked/P127.jsonl 64288 004b6c63bbe25561a39e0b47e8872bc85f0dc9b416f45066800ed02e888ad8c6
TREx/high_ranked/P1303.jsonl 29327 b98945d13e393129fc9033376127bb3b9eccd61a0473b5ccc696b463ffa79eb9
TREx/high_ranked/P131.jsonl 67790 e0321092ba10d7c85c0f6c409e1f7493cab7539a6571c06f51ee87c75a4b83d2
TREx/high_ranked/P136.jsonl 3286 487b32661fa7024b83eff0732a5ee7b96d7adf659dd78212fc80a5926045ad6b
TREx/high_ranked/P1376.jsonl 49141 f133577221749aba3c9eef744577ab1d9de04b06b1ddec8807e9cfced17ac975
TREx/high_ranked/P138.jsonl 83589 01d81c92a4249e513c77686640139877f3dd87e9d711e410708e71bf2b75df4d
TREx/high_ranked/P140.jsonl 986 28523e582f36ebf2541878b5a1bbdb26ed6575c454bed03f2582e2fb2071a2d0
TREx/high_ranked/P1412.jsonl 186429 d66ed93edc3737f042881b2d48fc305501c7b7d2bb369d919471b00d3cd05331
TREx/high_ranked/P159.jsonl 110268 573214689cf59bd71be33a51a520f774b39fb3e90f5ebfb946807ab414e48cb7
TREx/high_ranked/P17.jsonl 91791 8f462fe5250cf5ab11a579bc1f7556936b5296bdee5d146d4f50fee0c24db84d
TREx/high_ranked/P176.jsonl 227401 627c1c16f23d991e79d11d52ae0a766b247345e3e76066421fccdabc346a7ad8
TREx/high_ranked/P178.jsonl 118818 fd6f056eeb5a6abdf7036419b1bb186b9b6bb41dc736747aaf8c994de4f322c8
TREx/high_ranked/P19.jsonl 56697 6936a2bd90cc604919158f59d6df1f3c117990fde480d1372e1ac25cd205eb6a
TREx/high_ranked/P190.jsonl 5578 fa59dc52b1ea72b4e63f69656aca58ae5574fdf0212ddfe2f082fc175ead3b2a
TREx/high_ranked/P20.jsonl 79025 5b8139b0a15105c69e492a1ce34f2928c0d8a78ddd311d1ff58348e865dc3871
TREx/high_ranked/P264.jsonl 10983 8df7d9081dbd61d6625390d6dd888b8dc68d5790599b06eab94591f1bb9c841c
TREx/high_ranked/P276.jsonl 129010 b09aba4f8bba6c89ddb3333bd8f635458a69af99c2238c5467d24aaf9bec05af
TREx/high_ranked/P279.jsonl 91586 64a1b63f2fdcc351b0b1494c6373e585b1d0913daecd5347a6dde3d17e6938f0
TREx/high_ranked/P30.jsonl 75067 e4dfce9806ca23f571f4c5b6a8f982b1353580b7f0ab62c39574d5e1bf4d6d89
TREx/high_ranked/P31.jsonl 69208 b1b4e5a956587704b64e50e8fa7d96db7768a4f07d058992c75662d77e7b1948
TREx/high_ranked/P36.jsonl 134308 d9753fd40831139cb11bfb61805ed3c8a398d333e1d9786a0c2d104817cd9312
TREx/high_ranked/P361.jsonl 67363 167563c1fd8437163deae6aa6683ef83b1d877069c279b0866251a52c6851e1e
TREx/high_ranked/P364.jsonl 137917 e51ec284d0271720235937838b87c4c126daad84b90fc7e3e9d91c942bb877ae
TREx/high_ranked/P37.jsonl 181806 6f4d7fd13fa0088c6c15f5a51b468ab910bd2b410cc866833cb1119f98733d51
TREx/high_ranked/P39.jsonl 12602 a661f79e7fb92308fbf2b5a10dfd49830222e73cecd831023247bdca6c9fec14
TREx/high_ranked/P407.jsonl 149940 43cd5146b4d085e6890831f4bfd0744496a6f18a9719d03002a294023036c910
TREx/high_ranked/P413.jsonl 11490 04f737486fe3f150c713f0b6298ed78ac8c55c6f64b031064171a1ea31aa4ec8
TREx/high_ranked/P449.jsonl 64520 020ddc47cb7c4e602651530ecbd3c27b9b9d745abc25a802945da13da2758879
TREx/high_ranked/P463.jsonl 42906 27afd3fb3a9fedc05995b9645f6278f0b0e968ebff63a8a018cc92eed6608810
TREx/high_ranked/P47.jsonl 45800 ae05a2a819485779e8d79f40331cdb23c96150fc084b9675fcc25a9a190aba8e
TREx/high_ranked/P495.jsonl 73740 04c18c4f7421c03c678c02ea586f0dda3767ba7d6aa5edb3704235154c742703
TREx/high_ranked/P527.jsonl 27286 36388136131af7eb5480bd02deed113ab0f960ff0dd7260f96de00bc3bba3dc0
TREx/high_ranked/P530.jsonl 8638 0999c5088658360802341132c22e90cb9373f6a3d30c40a74f675953cdd5ae2a
TREx/high_ranked/P740.jsonl 15322 01b75c8f87846a3bfcff0ef2bf67948a8b431860ea4d2fb7d6529d119ba4052e
TREx/high_ranked/P937.jsonl 70563 efa6ba3ab8762b506dcb468f2d23ce2c867489e2104f6d6293a9b11bab374dfd
TREx/low_ranked/P1001.jsonl 167417 38c33c9b7fcc9a7b05dd6f390d0903ff063f7f5c4e1bec4867c14d3dd1a374b7
TREx/low_ranked/P101.jsonl 25128 8ced3ab42830970a24110e6de6a44258cc6d4256031b1231f7a85cd0b37d4462
TREx/low_ranked/P103.jsonl 239504 ca9dab650b1d492776048f6ed52f03513356464d976a308375fc4c37b79d106e
TREx/low_ranked/P106.jsonl 1802 c3896116d636f1ee5b5a450cee605a85d1ce28a74197206e96ce205e8734341d
TREx/low_ranked/P108.jsonl 1561 a67c1b05285d4d72b7f45774d6cc04687b45b44cb65193be730954da3deb03b7
TREx/low_ranked/P127.jsonl 64683 d5efddeee0af288a2b1a65ae75b3de54e3c09d36e40d2b43d1735db6ec4be36f
TREx/low_ranked/P1303.jsonl 29679 1063fa314448ec55bb0f23422f3fd4bce30a49effd218ea46ee5cb5098276fe2
TREx/low_ranked/P131.jsonl 67951 b9506e9cdf2d4bbdcbf3941b8ae20dd374a2637c4976d42220f2a9705f3d9d2e
TREx/low_ranked/P136.jsonl 3291 dd14ab4912a5978249484efe78830d43ab9283d87eb6239dead38aa97d71d45b
TREx/low_ranked/P1376.jsonl 49245 0af14f1b9d6e05acb3ba7ceba971447ebeaa283fee96c6ef53e605d934f3ce5f
TREx/low_ranked/P138.jsonl 83948 548b621d9f44f590d4d3d5855af96ab4150e54dc84ad98a71196193d513668be
TREx/low_ranked/P140.jsonl 990 5563c2b31185ba1c66ec62ed068653d00eee681601fee3d152b42a8427e69481
TREx/low_ranked/P1412.jsonl 187004 bac725bdd67d9b7b4a8fd3e24938c04f7e44e9f6bb667e68fc4b1aa4f21fe51b
TREx/low_ranked/P159.jsonl 110439 ab89348a05c78fecbf1bcf19fa8190a101304e9f761df4b1a0d0cfceb365d40f
TREx/low_ranked/P17.jsonl 91955 ae0748aa873e807a5266f5b402f0ac8c7430605e901357865c8dc63a382889c5
TREx/low_ranked/P176.jsonl 227596 5e82902435105849986a0bf7351993bcd98fdad6cc2d1f71229216ee80bf391c
TREx/low_ranked/P178.jsonl 119317 15520ce7531f85055bc14f7e7d42bda0af1438727028ab2d9d62822b4e3ad158
TREx/low_ranked/P19.jsonl 56723 7367559b7cd023387fe400a75a85b0c87470cf51d7ea4911b42df64c884388e1
TREx/low_ranked/P190.jsonl 5608 7810a86aaf7028a37c73cdc21f5eaa51bd43bb9b64acc8bd3a9a376eacab9d33
TREx/low_ranked/P20.jsonl 79252 711f0abff6d916b5a79604bc2b0359a6003d54435f0237127486e8424f3a409d
TREx/low_ranked/P264.jsonl 10985 ad3fb6b1e775a84875778a445f639c1be84b2b73ad239afb30754cf7b00b348f
TREx/low_ranked/P276.jsonl 129065 253636ec94a726b9c77a78a71b3bd348de23b2ad2666d9ab1271637432b5940c
TREx/low_ranked/P279.jsonl 91439 6de371c5bd35289086e9c28a1ba4f96842e4df69eb6733334fadd75dd6f3e8c7
TREx/low_ranked/P30.jsonl 74952 adfd5204d8e0c5e35ee8eb0a0ecaed435de5d81258334e8d9fe16c4a0a68ed4b
TREx/low_ranked/P31.jsonl 69865 f729194bc0a4db5bf22f33e91f42784d01432fcda9d5dbd140c306e2ed5801a9
TREx/low_ranked/P36.jsonl 134693 0bdd9cfc6916558ceb4465535c0f15442942bea15c9aea0676b6f2439f191e0d
TREx/low_ranked/P361.jsonl 67256 d9c077aaa15e53f49b2fe99fbdfc26a526192cb6eb930179777247db6f107a8e
TREx/low_ranked/P364.jsonl 138179 e5ab7754db25e4bfd94100551e8cbb6944ad116ba75d25522182a0edf49f6f1c
TREx/low_ranked/P37.jsonl 181826 13fbddf7a197592641bb1c1bd6cc8e88d33817a7f3422771d00da8f057e1696d
TREx/low_ranked/P39.jsonl 12764 d95d106dc174c76360a3244e4131cc0877fdff8ed4e66d82e3a3245f29681701
TREx/low_ranked/P407.jsonl 150168 609bc367717d95572e142a5be01942eb85bf2264e2a1298ccf55d9de428ecb57
TREx/low_ranked/P413.jsonl 11579 b97b3ba2f9e228c47b9ebad50690e13ef4ab3d66f69fb31f383810212d5a4592
TREx/low_ranked/P449.jsonl 64672 5eebd7656b0d2ed008cde4eb1dd5083cd1ebc981f2f2d6ad45965fefe8025e43
TREx/low_ranked/P463.jsonl 46110 5cecb9a88816f3b8e0538e010c03debaf20c5968eb3f60530a9f1ba57ac25172
TREx/low_ranked/P47.jsonl 46150 8f27ec070ac605f8e24f6cb5a1ea7c10011c563cb7daf252000ee8b1afe4f33c
TREx/low_ranked/P495.jsonl 73885 016faeaf41865a1e3c3b7b18516910ae6f86bd1ccd0a15ae6085e7befe6ed273
TREx/low_ranked/P527.jsonl 27392 c622dd35b6f0ee692098106728355691260bd9a483fc98ebee96de7163e38db5
TREx/low_ranked/P530.jsonl 8698 158b0856308a904edc1284d4f173c4c58b2e62f83727c35e51744cee8a7d5e1e
TREx/low_ranked/P740.jsonl 15374 8f408234ff508b7f84972de4789bc2213788f51a09935fe82887049bb7c71c4f
TREx/low_ranked/P937.jsonl 70843 51666c38eb5efb3a4b237f9260abce36243320612a0cade31bf4663ebb17733b
TREx/random/P1001_random.jsonl 167613 1b4d60e8d50a67435816280bc6d92d8c15e40980d9a7598af8cc198a977e0ac4
TREx/random/P101_random.jsonl 25101 3c19bc0e5bbe9b26d4ac78f8f8d4cc8ae69ae165d7a63255f4f43c50a9cf66e5
TREx/random/P103_random.jsonl 240262 61f2a57f1634118d1232bea6752e2ea5a73cf389c5cbcf41e5b802afcbc88f57
TREx/random/P106_random.jsonl 1793 5b3cd595e83b77e3bf548ac9c016e3c7988f487fa3e6d85f80fc2cadfd5af113
TREx/random/P108_random.jsonl 1564 965453fd7999b148236f53001001961c9efbc2663812b79dd6c98c5ddf001608
TREx/random/P127_random.jsonl 64972 f8251fbc0f19d0b742f5b61c42819c103152054b88c21412f4939873053300cd
TREx/random/P1303_random.jsonl 29636 39b10aa470a45d66c8a47bc8bb4587fabf4d5ca77f5185e01c30151852a73b08
TREx/random/P131_random.jsonl 68104 40fe3346a066da355fb30aa86a37cd3c4ecddaaea685fca0d9b5fbc9cda6e48d
TREx/random/P136_random.jsonl 3302 cf5720921c190dd791aaf042422310539f6da76fca1483a23998aea9446aa712
TREx/random/P1376_random.jsonl 49358 a80492d45a6e42c9483addfd14745c26b6876054a970363e40c208d8111d7b06
TREx/random/P138_random.jsonl 84317 7159e2d5e6923faa70e3edf3ea8dd9ac7dd82a34672e2be85c8820f6a26654ec
TREx/random/P140_random.jsonl 990 39ecd5413505b82ccfa6e4c805ef1a847a6e45cff28f14d55bf782f6db9ca0e5
TREx/random/P1412_random.jsonl 187330 3f159c0c05edd15c0331881581f6e9707984859665dab63b56679ca210e83bcc
TREx/random/P159_random.jsonl 110621 af3086721fe7ce6bfcff938a24444645cd77df5cb03ed796a61d36286381185a
TREx/random/P176_random.jsonl 229309 f5cacb978d4e2b7f7828eeae3b6243f7d1e6b11f7e3f644c62bdab3596e5ed62
TREx/random/P178_random.jsonl 119764 bcc99be43a758060b69aef33e48291d59e8d47fce167be8afaa64d8600e12cac
TREx/random/P17_random.jsonl 92266 5f33c73bcb9cca63084dbcd1a5c1aed2b99ff5e0268824c1d0b59b8be804e545
TREx/random/P190_random.jsonl 5596 da3865e476cd72ce1badbdb8ac31717f77723e0f6149feeb63b11aeec786187b
TREx/random/P19_random.jsonl 56934 769ea38b3533e14eda1d609cdecbe3258bf8f171b1d92979b6325ae0f3bd99a6
TREx/random/P20_random.jsonl 79506 cca03d08f2480d4358a5695a210ee21301013258e18479ceaf4a9e2b5771ffff
TREx/random/P264_random.jsonl 11038 1de1abd7bd8f1b551d816054d8d7c25df440812444dcfd9010c1374a26ab5fab
TREx/random/P276_random.jsonl 129479 68937a03056cf2449e68029d97984aef8e1f0243a19ee4b9a6c089fa7b112e9d
TREx/random/P279_random.jsonl 91891 b1d49bf3843a283217220e42d5668bc00bf244f7875375bb90ecfff167fd6e02
TREx/random/P30_random.jsonl 75303 d8b17eca2f60e759d25d7fd75ccd66abc172531cf69b4755c6dc455f7e4c1873
TREx/random/P31_random.jsonl 69582 f574b7b86ddb392c9c264a4a98805149566718d814ede1f4f9eff613d488a23c
TREx/random/P361_random.jsonl 67584 4e3bb40a1140f6ebf69399a19d2dce3e425c93a6918ff03e784e272315b60fdd
TREx/random/P364_random.jsonl 138573 9e738d8f7fbea759627e759ff6c2a2d2d9e58a7994a4343c627be0d529698a37
TREx/random/P36_random.jsonl 135160 93442665c9ceae9d7250b92ae2de5b7a07d195c706bea55800f3a021d5dbdf25
TREx/random/P37_random.jsonl 182477 4fa418b573b001dbb3626cc53bf8511788ba3394e2af4745eef7eb88d3eea273
TREx/random/P39_random.jsonl 12612 241c1ae060cb4b39b7ecff2c151c86cc5177258aa08708274daee81378d9c940
TREx/random/P407_random.jsonl 150751 cfbfe01bbbe3b4add50e75dd31147092f6007b1e148822e448b47d289c89658b
TREx/random/P413_random.jsonl 11566 dc248a73b68b883ea09425558f76b2919abba2557fb96245aa574608f62f2ca7
TREx/random/P449_random.jsonl 65100 3c205bfef20545824106534cda119d41c49ef0a6f2937110d0baadb7d9e2986d
TREx/random/P463_random.jsonl 43402 2bd0cf2c99dc9be14d366c9198d27ea53a62b1feebc994e3f38b23c88f78fddc
TREx/random/P47_random.jsonl 45928 88e557dc9978c49d0377708c4c3256d696f2076ad11ba23c2950155937e28067
TREx/random/P495_random.jsonl 74129 606658872313fc5207d2c9e92480d17b72ba778d03b3af30fdc878a6f4497416
TREx/random/P527_random.jsonl 27479 02035af9e5545641468245098fd757edcfc8e099411ef836a8915c566e9c07bc
TREx/random/P530_random.jsonl 8674 52c09ca7a19a1635e97bc70bd0561c8758d3d611a8dd9b495038ce6a0459607a
TREx/random/P740_random.jsonl 15401 2da30fbd27f667697c5d966e7ad643826268df96845b8700837ceab7b84be59f
TREx/random/P937_random.jsonl 70935 22ae7d6ff57f14e4c108fe08072b40b19303a95b2fe98beb8788f900efb38b2e
"""),
        ),
    ),
    Source(
        "pararel",
        "ParaRel: 329 paraphrased patterns of 39 T-REx relations",
        "MIT",
        (
            Origin("yanaiela/pararel", "cb5554678457beb5ac163d888f1ce8cf174b3f0b",
                   "data/pattern_data/graphs_json", "pararel/patterns", """
P1001.jsonl 119 160413abdb74470f19ca0fc97fc54b8241b6526fb54a73dc8906fb79cbd9ee20
P101.jsonl 1655 199eb2fbdcb6c26ac81ac0d48b485521d57fa961c9902840d4f5fc937f59e94c
P103.jsonl 494 edb4df57360abb418ec72e96d518bd42f216ccac578bedbca6f5f769c76951fb
P106.jsonl 1315 4066382c8e5d6038024aa1c601aa53fab7c48596677ed26d71240597d42ee5c1
P108.jsonl 473 0fb4993970e59f5acec2af83b3bba9c54b171db201f46ad28967f79a054dc220
P127.jsonl 396 aa5d85fe2e44b9776e6b16b7ff7ef462a85f09b33315d31106939f0e74fd7917
P1303.jsonl 411 5918d169f43d7486459d421816a9d2cd1935c4e857f2de01ebcae7120dddb94c
P131.jsonl 322 a0e7cd10922b61fb6b200c2c3b3a33cd0c6944446a7659b66b269a21762ecaa7
P136.jsonl 662 677f9878d4d26a53de5d5c874fe5e28cd1a37b3ef678acac36944df4c01134ca
P1376.jsonl 1695 67c9bc7dc08bcca42ba5d5fbd11b35c0bcf41a961bba87d760e4b29f196a9bbd
P138.jsonl 2430 a15d8689fb52c2245cb76244ac4fce40eef868c445473b94d5888586a46fc3ad
P140.jsonl 500 1adf3a553047050b195e9305efe0fb3bf34d913b320818a3e88c1fdd161789df
P1412.jsonl 956 b2869ca24f313bbfd815a02259bf53c37ce39df0b11a2704f791df47b1e12b3d
P159.jsonl 1269 9679b341f4fb8ea9d48d9398bc439a8869908e485818638a4345437f9ee97002
P17.jsonl 351 2717b226dbca5237ec3e8e405a6464baedc5c4d7b13554204aafa76df740f711
P176.jsonl 1313 13aa5d5af04b58b16b9b6a99ba6c96dbdef7a4fae7dcceaffaa67a2ce5301401
P178.jsonl 1770 5fbdd8e8a6dc85a686a7067bdc0d6fd35307e5c17b121ddcecdcd2da448d1313
P19.jsonl 1407 7c6016bb80b386b8e7f8a99d5c73ea925ed2b9f29d5c0c9c252938c9533b3522
P190.jsonl 482 5edac1cbc8454283623b6e20304a78c53b28ce0bb998826d358a8739809077a3
P20.jsonl 866 a209a17ecb4ccf0f67261072e97596900d9e77bdd70c3e8a99654af1039f98a4
P264.jsonl 2179 53274030ad439f0bfb85bda4390fd7f7a9868c8a3f68e151e08c91e596e7bc74
P27.jsonl 1058 e5ce71502ec3c287749e649a1ac4640878801b3dfc49df8eea1c8fca65347f76
P276.jsonl 202 2ee34c4fda9d9352f6eba0d8b41b0313ce2eb24ed3cabc4ac131c9f1e9cd1fc5
P279.jsonl 461 ff2b73df5edb13718a5f4bb2004e924ff99314e6625bd35c0ca4aab9dd7363ec
P30.jsonl 514 69f0152df42e17dca5c3181ddf1ccca8110fba50fd4b61fe9e48c22c8e5adb93
P36.jsonl 1696 78cbc36c71073ee993b2f7194c9b216af839859cefb0186cef2c2bc89f377def
P361.jsonl 216 5255cd61805e25590013518aec793b2bc51d635a02a9088cf0b5788f9db4c1a8
P364.jsonl 738 c96f42f6dde8ed78be284bfc3666056304d399e0372beb2fb629382feeb9ca3f
P37.jsonl 1442 b5c4ad242edcf9104c4fb0caa3a470ac3bc2a5cfd02f160d5b0d96969f63bfea
P39.jsonl 726 51de02294859454289284c781bbcd54e038842d0040e55f598ead3652035307f
P407.jsonl 2083 a87b9e7d7728de1f782013edee4567e7c5fe6242419c691f48a4177d166df532
P413.jsonl 656 3d1e94ada2e9f27eb99275f2e07c80d21b9a5ea677fe6fa751395ffc778ba0fe
P449.jsonl 1160 cea08d3d7df17f648d84814a7c607476f8fc4291b94976b88658f1b35cf90fb8
P463.jsonl 658 7973e666b4e33c05f8a8cfec6cbd0b3d09edf40bf9a7a3833e12bc3737399ce6
P47.jsonl 1128 329108ae3e0138c7af09697b1ea33e1808ccdbe8931d05c02b5334b686b229e2
P495.jsonl 1874 3a2abf7c9ffcf1753e27efa15a915d838c472f5e52f249410d0af47cfac7d9c2
P530.jsonl 1289 cc6193686be94ed9fe37deb765753e11c714f6f473e2b2bc171839700b31915d
P740.jsonl 1481 dc588e68ea43ac4f9ef3942d3d3b4b0aee0c099f72001caf51036b0da54f61a7
P937.jsonl 569 05a2822a2d62a012ea80f6e92401b6990a5ce05fc6543a4df6b34b4b3cacc2dd
"""),
        ),
    ),
    Source(
        "autoprompt",
        "AutoPrompt prompts: BERT's (OptiPrompt) and per model, seed 0",
        "MIT (OptiPrompt); Apache-2.0 (AutoPrompt)",
        (
            Origin("ncarraz/OptiPrompt", "e90742b137dcef295387e4e8227ee0ad9b0d22b5",
                   "prompts/autoprompt_prompts", "prompts/ncarraz_per_model/autoprompt_prompts", """
bart-base_autoprompt_seed_0.jsonl 6659 ac2fdb99a4f2d0d64a0c7085ac5d2fe6bea074978f691bdfb91587105f982f65
bart-large_autoprompt_seed_0.jsonl 6584 f41aef382ececcf94b3eac5cca4d6bda3515fe9796190934419e93977e02fd6d
bert-base-cased_autoprompt_seed_0.jsonl 6212 bf02f5fce0c236ce1a538b1eb310bf6c4b7a16bf590d7b883fa96eba334b611c
bert-large-cased_autoprompt_seed_0.jsonl 6071 fe6b041b960e7b71640cb597c1f683e9db4b64d9dcb479df45953273d7fe9856
distilbert-base-cased_autoprompt_seed_0.jsonl 6289 80042117c96e8d8851464ba973b625c8d90d0bb0d3636aefb372c7e91763e05e
distilroberta-base_autoprompt_seed_0.jsonl 7093 65ff5ed69cd74803c0f56e3680e81dfd58fbbc3486fb2b0a838e0d0ed5008803
gpt2-large_autoprompt_seed_0.jsonl 6588 10279dcc10e75aea9dd9ec80790efba6e7ddef81da505390485e6d68a470da4a
gpt2-medium_autoprompt_seed_0.jsonl 6560 1689a73eca4b12af7ea18f05565d482f9b5a8b828c36aa27b2274322db852e0c
gpt2-xl_autoprompt_seed_0.jsonl 7007 2eea8d8453aaacaf3b990c71cf30a201071d9f6710aca626fbeb99d29478ec26
gpt2_autoprompt_seed_0.jsonl 7044 1f71182fd610d68701f2e8943774ba17271f844016b1c6a9f7d4330c007f1239
roberta-base_autoprompt_seed_0.jsonl 6935 9b97271ef2b64a2b55970b56a25fdc72dac643b8d395021fecb09e08c1239b57
roberta-large_autoprompt_seed_0.jsonl 7238 b7d1700be5259da63d1dfe1732077b236dbd4938ca69dfeab8dbba88738cb891
t5-base_autoprompt_seed_0.jsonl 7016 47cf5534377fa1b28e1188c4dfd9fdf70204da22932a079d33ead13f9efbcde9
t5-large_autoprompt_seed_0.jsonl 6892 978de291c35363540186334991477ba5e2251d5df692856ac10d8a84e405f597
t5-small_autoprompt_seed_0.jsonl 6997 33ea08c3718d3f79d8a1968023abcb544d965b24c80267b75b4f4dddad11c0ea
"""),
            Origin("princeton-nlp/OptiPrompt", "9450bc96f28ac3df01337c79be079a2ac3defb5c",
                   "relation_metainfo", "prompts/optiprompt_relation_metainfo", """
AutoPrompt_relations.jsonl 3359 1a6445505232eb712dcaf3e4c0ab8a79e613b8ecd6420b014a57b35c3feb9553
"""),
        ),
    ),
    Source(
        "lpaqa",
        "LPAQA prompts: top-1 (OptiPrompt), per model, and the mined, paraphrased and manual sets",
        "MIT (OptiPrompt); no licence file (LPAQA)",
        (
            Origin("jzbjyb/LPAQA", "3204221b47e66caa9bc3aebbcc4b2c2600dbaa1b",
                   "prompt", "prompts/lpaqa", """
manual_paraphrase/P1001.txt 509 a0d62165c7b1e03a7b0a0b2639de4125d0959b112456eb90607cf07a722f30b3
manual_paraphrase/P101.txt 744 f9674d951fdd988dff868559dd96aa177d9054dced67b7282a57d35fc295d2d5
manual_paraphrase/P103.txt 860 52826896c38f562df63b7a2268b5cecdf8588e896d08db1af3c4c19939f258a4
manual_paraphrase/P106.txt 646 e97022ce18c1d629b427b3a03d0aa5498af7eef4fc0163b363294697f0c23eff
manual_paraphrase/P108.txt 622 55b00966d693b917ad1e9bce97402c54e82f6fe67ab845dc5d0cb881cdba1b55
manual_paraphrase/P127.txt 381 501d5cc022f4349f0a29d2f68ab30fe1c8ea1b9dc701c157a2e4154f8ea4c4e0
manual_paraphrase/P1303.txt 243 647079d1161f549cb70f73ac2d09c8863a08950e626ec6f314f61a4fcc01e21a
manual_paraphrase/P131.txt 505 ea9a379470eab74247dc5a0ac2086b138fa1abb22ef43bf4e4d651148abac098
manual_paraphrase/P136.txt 587 3e53f6a80f1cc576c04a54d8895a76496fdcc1a5aedf705174753658578f0362
manual_paraphrase/P1376.txt 770 5a9633f52ad249513a7fcd84b302a343fdf6d81590eb192457b34f55107bc6c4
manual_paraphrase/P138.txt 563 5c6718c4c7e07f08c9194e5c18e19effae217fc3ff8455648441b68782823505
manual_paraphrase/P140.txt 1034 0f07e42e0d9b5cbf02d6f27a5b1d4889df15a04709138d93b2a4cf6a3dfb67fa
manual_paraphrase/P1412.txt 919 524b83acdd827f2975bb9cb0b2c004e0ec22d7c7ed28f640663b9e3c6fb3affc
manual_paraphrase/P159.txt 543 58643abb44ecc6c7cedf778fbf8fe54a1ebe7d9f088d0b74e32683353ef45bd8
manual_paraphrase/P17.txt 505 ea9a379470eab74247dc5a0ac2086b138fa1abb22ef43bf4e4d651148abac098
manual_paraphrase/P176.txt 645 ee21c79f4a665d35064f1e2151d2dfee5624cab0a5465995518f61e48e1492fc
manual_paraphrase/P178.txt 530 08f4911c3d9cc57b34c23fb6a85f4c8be646c43f0bd7dcbb0b141a0f2ddc4ce8
manual_paraphrase/P19.txt 615 0a3ea6b23aec38d77e2240d8c2ebbbec8033b887374b44af0d0f62bcd12a85cb
manual_paraphrase/P190.txt 844 e0564738d99145cf2a06aa53914b5fc2c13a96679a40c14364f2351f49125c45
manual_paraphrase/P20.txt 390 9e55ebf6b05c4cd20edad20449ee11f05f514fed05e07e2e9a28e70552b637aa
manual_paraphrase/P264.txt 620 57d8d6fe2e5e64164f3376f37fdaa5ba9234dccbbd2b3b12dd4509f34959dd32
manual_paraphrase/P27.txt 538 be7363696bdaa9464381eb3e1b6a778abdd1386c0f2463399e517ce53c0bcb32
manual_paraphrase/P276.txt 505 ea9a379470eab74247dc5a0ac2086b138fa1abb22ef43bf4e4d651148abac098
manual_paraphrase/P279.txt 771 0ea8e30e8c31dd526795c0d62b40120bdaeb21c0d1c49cb78f806d9d79e58b5e
manual_paraphrase/P30.txt 505 ea9a379470eab74247dc5a0ac2086b138fa1abb22ef43bf4e4d651148abac098
manual_paraphrase/P31.txt 214 2be0176702f9c4320b246398cbcf6ade89ba5d87a83e60f4900d3c840d95a113
manual_paraphrase/P36.txt 653 b4a941bf0e9c61bfbab9c513913d02b729cab53b2e8f3e1cf7f3a292585da58b
manual_paraphrase/P361.txt 412 38c75c454355d50c29a6ebc8906ed60230683a526f314dfc01fa8059bad23d1d
manual_paraphrase/P364.txt 782 37a68567e1980b4259e61948493eaf655e4711b1fcb0ec5af769d7047485460f
manual_paraphrase/P37.txt 528 c464128c306da75b7731329c6e02b273d63925208a4d528d01e0a21da1903274
manual_paraphrase/P39.txt 773 dc7de51a2825db6e16b5d70651a94e3eeafbbde9a8dc395d0936e29419e9e2d7
manual_paraphrase/P407.txt 574 9462c55f558f1dbaad4436c0775b0fde0bca8f8dd7d581ca2a1a1952d72f4fcf
manual_paraphrase/P413.txt 814 23b5b9fc8cf059c1518362654772d69dd59b8cccb48818a5907d12843d51e3b8
manual_paraphrase/P449.txt 864 3040510e79642a65efd0e1f0d62e653ea1e6315753b7cb7d1f9c9c6da98b36ec
manual_paraphrase/P463.txt 489 a32a0cb4c03eb184d04bd1d64d87b37d0ff8b045e179bf0554921cb4daf1a759
manual_paraphrase/P47.txt 907 0ae60c7db1e74081f4f9ea21eda9ac545246d970fd8a70b67b58d71dce520fef
manual_paraphrase/P495.txt 662 7d27469404d6b13c83490a8d53aaf5596d44481ad793543f86fe042151a79de0
manual_paraphrase/P527.txt 536 3f5110218de9e0e007dca106137d27592eadcdeee9a259af6357591d71c0ae8a
manual_paraphrase/P530.txt 721 ac8ebc739e785432c6137c110856585fba9034e8a792fa378437b80a54cc290b
manual_paraphrase/P740.txt 761 0553a46a19732ba2a99413485b4a5e08a19a8355c032cdfdcb99f56ca4003dfd
manual_paraphrase/P937.txt 731 4bdf7d6c80e6e0ff715a0a0b593fb7fbbbcf01cb663fe085abd6321b0159bf55
mine/P1001.jsonl 2252 103310632562ccd61c36927ff3052f8ecbec1ad64d681e84ed05099218c511f5
mine/P101.jsonl 2131 dd54456fc73431ebffe9f8c46c2e15496af1b2ca27a8c1726f5cfa7e51336e57
mine/P103.jsonl 426 d4b7702a085e024d115050f20c69760d26b5dbbc3e8454e51a65721372aaa2ed
mine/P106.jsonl 2033 2f55ec5380ce15f8d5bb91a2cd86d384e68ccdb7dab3e761270c4df10218eff0
mine/P108.jsonl 2002 e8b61076631757ae1bd7f8335e4ca0e1f29be43478b893ccf8c6b9528f56093d
mine/P127.jsonl 2049 40f4f70852c153a259aa82fa8b00e46fe59ea252e5cf6487d1a085fd7a47e7e5
mine/P1303.jsonl 2037 d05a16ca3d4b9c60f1704d21544512c325f480a9a5d2fbd8921cee1c7fbec5db
mine/P131.jsonl 2089 b47ace9e083b0bbec1eb933d0570bcada0111e1d26daae2a43860749286eae17
mine/P136.jsonl 2020 72f83d7daf2728ad3401e7389357e76b2dccc8db781b00eb4fc556df4a10c2ca
mine/P1376.jsonl 2149 185524342aa660e48a4a0db075a75ecef0b5d3c5db44e0505c475cfd99771594
mine/P138.jsonl 2124 3f9150f235dbb81da4b56d3b3d1faecb492914b4d570446784de190bcad5e163
mine/P140.jsonl 2076 258d3cae19a07d244080e70a33faa16e781d6efec7920c184cc8eb500516e071
mine/P1412.jsonl 2024 f4e98a3348b2e1f3471254bdb679e5d3c21650575f7c18c782ef3218084b0c5b
mine/P159.jsonl 2041 36ad71d16ce1f2a3faf58614f5b2dc9971dd1cd6a2cf75030c6bd7f7084a5a90
mine/P17.jsonl 2006 5c4b7ddd4cab1bac70db5b5bb82083f409e858d1400a4682fab24b14d39d822d
mine/P176.jsonl 1960 c6321601db34dcdf2c202325f67ea751b2923e5d36ef4c73ee965045603c42db
mine/P178.jsonl 1983 1bd84d03e5ad7f680b422905dab91f5271c452f64f5b561cfd3eed435a107a12
mine/P19.jsonl 1988 8ff5d9674800164521e5365b4cc0820292ef6f0da4eb5896574f8407d16f7abe
mine/P190.jsonl 2169 1276eeba9f8c108aa8b4165c8f3f86a197cfb5db8a1d057a038f1f063cb164f3
mine/P20.jsonl 2024 a5686b8ed00f974cd8fcf4e3cbb9ff925134673c8c17f5f0da1e77130189b891
mine/P264.jsonl 2079 6e1c79abb93ac3148e977584186a892adb54124c60424ef9f868d91acc990be6
mine/P27.jsonl 1988 7fc3e1fed5979f97f0d799457aa0282da6b6402264c357eb9c31751228aeb590
mine/P276.jsonl 2098 49aaf5beb6bcc5f5b31e5f9da64dd10b817c7c0d3eb5839a083d4263c75678ec
mine/P279.jsonl 2029 4a49f252b318b40b3eaf3d8de10612400cb58e063041456bad248645e6237b95
mine/P30.jsonl 2253 4736b6595eddfc6cab3d50b4a847f05a3faf97a443f866c93b9f74aa78466673
mine/P31.jsonl 2044 6751cf2f800a14ac162b80da812a47cbdec87571cc8d19e7de8e613fa38406d9
mine/P36.jsonl 2115 6df342b04df6e136eaf09ff00fbdcff5a01028922950d87d6e284b8e424b342d
mine/P361.jsonl 2077 0b76c3ecaeef742d37b960434a28ce25b343e24947ebe24fb3318ae295c1f7d1
mine/P364.jsonl 1889 e2ed48bc91a4c6b030ee0259ccbe2daebfdaf5739f10adf0284a6ab4eb98b6b4
mine/P37.jsonl 2150 30856f87b429fff49efac5ce5f87badc4e11e2fdef580f0e86d5bc9647b1f6a6
mine/P39.jsonl 2084 6588c3ec83c19752f206f504e7176ee6b56bebc92832f93e2f318d138a3652f3
mine/P407.jsonl 2050 43ad1c20ef5d39c30ff1c2dc8683c0ea39af2391d5e10a60e442192c2662c98a
mine/P413.jsonl 1806 0e6f0fd5b799427af50a6dd1d87a5f1ddb24f4c0b8c9dbb8103637901fbb1fa4
mine/P449.jsonl 2053 85e029f5ce40986349d210660ff837d987a9d19d128827fac776e278d9eb6c1a
mine/P463.jsonl 2069 2c858c50cc7fc6744de3a3361959de8e1490803eea03a1499271752c791c20dc
mine/P47.jsonl 2071 1e8add24f1a64458064e000304ef6f314e66ea65b82dd7399c8c10859bb76976
mine/P495.jsonl 2149 10180bf232e790bb10ba263926c7bc39f9ef24f2ea9b08ad4a1d566b3e75c14e
mine/P527.jsonl 2005 dc87ac0adc226ed7ad37fb356a31b9328e494645e7b265727ceaced53d6cfd0d
mine/P530.jsonl 1961 3acccf449cc23151f67f3c40d6a18c9e639332bf5a57b07233bca0241cba94c6
mine/P740.jsonl 2056 fdd2ad3a54420d0761c3cfc4b00c991d5ce65f6b588f15d63559641ecb979559
mine/P937.jsonl 2010 e94c60154fd3c8a39061dcfbacc3d6b6ec53625c207ddeab85f0e2a9490fabe3
paraphrase/P1001.jsonl 2077 7cdb745fd17227418495b94bbc57ac9935b46c33fbe81ba1485836e8c09450a1
paraphrase/P101.jsonl 1475 10e91934a6b0c410c6c8cd60778c07e0e4942c16d5d36d7b13901ad6e831919b
paraphrase/P103.jsonl 1754 c49544ae6f741893e9006b26e3ebfccc8c3aee4b83c86be157b2f5c2671f9199
paraphrase/P106.jsonl 1976 83a4d68445914eb6acb1bcda377877d269c061bbd6e206579b9780d881f0e9d0
paraphrase/P108.jsonl 1442 4587d66e3c1e055bf9c3f3d3681a23d56e8c30dcefe913cbf93e480f29439347
paraphrase/P127.jsonl 1253 5a1fb5e09a0ac26f7e0a39ee0ccfcb03a461ec226afb64f9d9d3153d00d45fd9
paraphrase/P1303.jsonl 2163 b2ca26df2962a1a7d4f2522fcc239e5a9b5b96409776c75b05cc0de23e3e8670
paraphrase/P131.jsonl 2051 7bbd62e7616ab266b39bc896dd4c7b09d90af718959778ef5ee89c2ed5c97a4a
paraphrase/P136.jsonl 1945 24d009e80c25449234e618b325cd353f3b1201218a6f4a607cf749f6b86cebe8
paraphrase/P1376.jsonl 2388 8f7f8bb157612e073be362b924bbbbb016807906597472bbd39ad62944713a75
paraphrase/P138.jsonl 1782 e0854d7e4eed0aa6bd2994a6851a1dd6810d5a7c4286c9e54504beea5e6ba0a9
paraphrase/P140.jsonl 2224 18d7885925db533494a3d5dfc87667a6140e0bbede25de15710f98f8bb94ae2a
paraphrase/P1412.jsonl 1621 b69e053536dfcd1064b72d14bf77ad8fc3d5a54dbc172232060d0e74ff86c67f
paraphrase/P159.jsonl 1834 462dd3412ea91e7b2819965e35aaa5ed282db1dbdd6bd5db205057d13d901018
paraphrase/P17.jsonl 2118 64265fc8f0b874bec4355a86e1863f6697d42f432c03d1041f66d37455f99796
paraphrase/P176.jsonl 1755 b322acf28f18d11d9953e5d93e06cd5879f7ac6ffea0ab3c0481f44c5f3eeafd
paraphrase/P178.jsonl 1910 28b5c7f001c789db0ea0032b8c90c415703f09c7146f44d5345d26987530db95
paraphrase/P19.jsonl 2085 66c89c2b30fed145a21803fcb55b15c4a2825c79fb7fee651524e8e226a106e5
paraphrase/P190.jsonl 2207 25ecd9e399f3f7fda4fc86a22ae099683dcb5a2358180291801732a5d31e7fc2
paraphrase/P20.jsonl 2088 75229e7b11b760f9d64b9a18f2c74071c721305fd1b34810f237a02fd63e324b
paraphrase/P264.jsonl 1703 b1a6775dcef364ff6cb0101ca322b68aff545179d8589171293b0f59e382233a
paraphrase/P27.jsonl 1655 8edbe29074efdd1d3a40dfd807cf5925e503f3347db546cd0c6a787ab342e8f7
paraphrase/P276.jsonl 1980 bf1db5eb819dd177209f82d051bdb97a27810e91b51af6d8345bafa9921a365b
paraphrase/P279.jsonl 2060 868ac9fb9dc60ff8d86a6dbb851aab1cc43ebeca45e20db651e6776dc18f575b
paraphrase/P30.jsonl 1384 98be235acec54ec1e68d0c6680616f198cf2ef643354724865df1877e46bc032
paraphrase/P31.jsonl 2074 513961d340c68d5535e8586ecfb680f664e886ced390d498600c954fdf72708a
paraphrase/P36.jsonl 1972 262a7ecea2ac276f4cca9ee88480ba70751b97a1601c2a9d99ece6ca625a253b
paraphrase/P361.jsonl 1374 45fb006253b4de0d037f1244d36c79d2f01357ba69747622806016d4d190cabc
paraphrase/P364.jsonl 1045 0f67242ce3229e6edf0b180ca342ce2b03da1cdc226243619f591624a899dfee
paraphrase/P37.jsonl 1991 7a2bf95fb7e48af7053032b5d0a8dbfa329369d83bcd5e1d1c6d71ab77d6bbef
paraphrase/P39.jsonl 1864 2776d62b5bc4c15d31db11d342c4a9d2dc71c697a048a79a9f7fe3a08d94bcde
paraphrase/P407.jsonl 2168 ee8a8e2dd0d9860237d697325d2336f53132efc50c52d639bc11ae180fcfac21
paraphrase/P413.jsonl 774 14188a4c2169a449b0cdf601ac557193f20d816a9abc7b91581b9f3db957a892
paraphrase/P449.jsonl 2081 ab0a31b56638f1d3f52654b3530b58fd2f3015af8ec40e698af11bd2d8f16b60
paraphrase/P463.jsonl 1336 c8857238cf4400c901103167d5c28448661ea18935a3a364a782fad0f30b1032
paraphrase/P47.jsonl 2022 4d10b3d21718756792f78021c3078c401e902975a17a1bcc569820cdd4b12b91
paraphrase/P495.jsonl 2230 15a9dafbd4055ba557fa0f629218b542fa7ae52e987d9f26ac0aeede5e517fd4
paraphrase/P527.jsonl 2061 b269a9753ab6c94c4f9ca5d07084791ffee2e9a04e43ab2afefd87b55b16b080
paraphrase/P530.jsonl 2259 4aa95c2884e5526fd2e650f11785f571a1c23eeb04bac38827409e2ab9978559
paraphrase/P740.jsonl 2027 6588c49d4ef7897dd0d4b44f9da47940f25b6e0bcf2fef343c19a66af34f6595
paraphrase/P937.jsonl 1366 5db7cce5e0baea9921a44362e234f4ace74ea387d9dc9caff8bbbc39b1895c1f
"""),
            Origin("ncarraz/OptiPrompt", "e90742b137dcef295387e4e8227ee0ad9b0d22b5",
                   "prompts", "prompts/ncarraz_per_model", """
lpaqa_prompts/top_1_lpaqa_bart-base.jsonl 2451 4b067a6df25d399814f7e91b849658e2af01fc8b1131677d80ce0ca9bbb5e252
lpaqa_prompts/top_1_lpaqa_bart-large.jsonl 2436 d1f7ada24560bfe05875a804bb8f68baaa66552a551142892bf5970df9c16810
lpaqa_prompts/top_1_lpaqa_gpt2-large.jsonl 2408 690012d5f2dff054e5727315d85a2dadef79242dd3d208222dda6292aee7919a
lpaqa_prompts/top_1_lpaqa_gpt2-medium.jsonl 2466 afc452f943c477f53f56c1238998951a7e55232ba7fe02d6669a4485b9efaf0b
lpaqa_prompts/top_1_lpaqa_gpt2-xl.jsonl 2468 6590c104cfdaf2f167b41c1b593fe98b7ac28fd526d01777486d5851d61abc26
lpaqa_prompts/top_1_lpaqa_gpt2.jsonl 2455 baf28a4b9aff452c37e142ee1c4d70bdfafc119ed0aad1d7ef02cb5d4f5235e9
lpaqa_prompts/top_1_lpaqa_roberta-base.jsonl 2442 611055280b930bc0012972b1fe95cc508e598e9485c09320f9d12c41fe34819a
lpaqa_prompts/top_1_lpaqa_roberta-large.jsonl 2449 72a19444d1c76707bc3dd4438f276ae77e1f23fe957e43b023c09d4355fff653
lpaqa_prompts/top_1_lpaqa_t5-base.jsonl 2431 66214e8c39167b8b63733f43c940166947e2ca4bfd11052fa579d15cf18e5e8d
lpaqa_prompts/top_1_lpaqa_t5-large.jsonl 2447 db7c2ce482821c59f5d4717b27ac124bc615b0fd0a4c4ff95181ec8e1918dbbd
lpaqa_prompts/top_1_lpaqa_t5-small.jsonl 2413 d2a587ee32c37f6260820012264f85ac1abf0a0d1de102f3b9f8e1161b339b4c
"""),
            Origin("ncarraz/OptiPrompt", "e90742b137dcef295387e4e8227ee0ad9b0d22b5",
                   "prompts/lpaqa_prompts", "prompts/ncarraz_per_model/lpaqa_prompts", """
top_1_lpaqa_bert-base-cased.jsonl 2425 7531573048381d9a20fd6606a70e21dc630525e21f6df8264783563ebd58cffd
top_1_lpaqa_bert-large-cased.jsonl 2423 6a12cb0be268862ddbe9e31b5efbdcae11c262a57c8d629a92a6b523d07427af
top_1_lpaqa_distilbert-base-cased.jsonl 2446 9a0e1f36cf0af78a6786e372ccd2562ff2a2710d4f8578b865c6cafb9e603e10
top_1_lpaqa_distilroberta-base.jsonl 2473 d3bbedfb6870e341335b6d36309d8a342e33e09d542c2b6e9935d4b5627201a1
top_1_lpaqa_longformer-base.jsonl 2446 d9c994b9a903fe58a5563ad4e642c3cee904217411f400bbcd0b3e607d06c05b
top_1_lpaqa_longformer-large.jsonl 2464 302cfe3588006d0d42b4101ff4c071571cb5231bebb0e0b429a4532a1ae92dd5
top_1_lpaqa_transfo-xl-wt103.jsonl 2442 cb03e910cd363856d17596fb31d21d57a5f96774ff5dfd8f8a8cffef9094b2fe
"""),
            Origin("princeton-nlp/OptiPrompt", "9450bc96f28ac3df01337c79be079a2ac3defb5c",
                   "relation_metainfo", "prompts/optiprompt_relation_metainfo", """
LPAQA_relations.jsonl 2555 5a488533be9a12253ef21fea10f9e8f5e26692d0741a2e9e8b1c22d280d6a586
"""),
        ),
    ),
    Source(
        "coherency-prompts",
        "the coherency paper's object and subject templates of 46 relations",
        "MIT",
        (
            Origin("paulyoussef/coherency", "18a9203378528c101eb56d4f39664fefdaf3f25a",
                   "data", "prompts/coherency", """
relations_autregressive.jsonl 12934 b5efee7145e2d212112956bac249658654f0df334dca56bdce43ce71a36e8380
"""),
        ),
    ),
    Source(
        "autoprompt-trex-splits",
        "AutoPrompt's T-REx train/dev facts of 41 relations (disjoint from LAMA's test facts)",
        "Apache-2.0",
        (
            Origin("ucinlp/autoprompt", "965e0909badb1ade47a6fd3c05dad4615355e2e8",
                   "data/TREx_all", "autoprompt_trex_splits", """
P1001/dev.jsonl 6183 efbbb56f41d5560b4e44f4cd632419576e6d21a51eee56f2beba4bfb55c9e122
P1001/train.jsonl 24796 9335743f3697083a390946635ea6a311d91b7ef32967e70d25bb6b2432f79153
P101/dev.jsonl 17021 c1217a83929412dff96710512a569d5a0a43c0718ee6226725fe7015e3b9a436
P101/train.jsonl 68296 17cc71ee8bd4675e74f4d426e22baf1e3bedd6b0c859d5f4cf284f9999c723d2
P103/dev.jsonl 16982 9d1fd989e2c11c9bafd233147da7b0e86f14b9ede08ba5f9a63745740460e4a0
P103/train.jsonl 67628 5bc7f3d729c7b0c1eb3e1c948ab77d9cc6b85b2acb6a99c3b37831df630a4558
P106/dev.jsonl 19132 9099d3f07706ecbfd8279c7e8baf960fa78108cb0cf5fc8810e56b5d4c53870e
P106/train.jsonl 76278 2588e7af1f348ae085df7c9ca8b9dd881ab780d3e0cfc99ebcd1ba5d033d6375
P108/dev.jsonl 4091 39d5641a268e7d6be6b0db7fbd3ca836a5e49097cb30873293211ec14bdb9b53
P108/train.jsonl 16206 90b7656e01118ea5a52773570fec844c003c01680ffd6e10233d5ed43778816d
P127/dev.jsonl 19239 75deda37a9a61cd150b6c3ade88041ad7eb7bd11e7feeb5d560ee3d0a982ce77
P127/train.jsonl 77386 350485a8d16bef328f377489ce667a54b487aeae876bc5600736fd0d16d3f667
P1303/dev.jsonl 18299 01a3b7f8b5dbdc63cac533a1fa7bfa0df6cf97044410514505cbcc46249cee8e
P1303/train.jsonl 73152 80e997b1589807ff5659a63d51e17dba7f9b341cdafbb897da6dea3d5f22f607
P131/dev.jsonl 20057 1e7c23256143ee6374906f821fab6886c5c099c66fdd1c4d8f2fa13a01e06fe1
P131/train.jsonl 80531 ab582cffaf3e0d61ead096d1ae55ac65b5990902098cb17c501b665a38b18e24
P136/dev.jsonl 18948 76c8864166b02c626223d9d0500a93ed3841d88f4d1edc8f36c1918245ae7f9d
P136/train.jsonl 75457 1b0353216965ef36ec9439533facea32d9aa24bc4df8eb66047b91630cae806c
P1376/dev.jsonl 19939 895e21a3d355424cf08ce029761ce9bf31b7f04477e80d2ad73d63e94866d2c1
P1376/train.jsonl 79370 04250e4d91d290298c04738e4b1ac43522d1b9a48db024c986401f2050fac058
P138/dev.jsonl 20174 ae0d87888fc2f4a996b006a2ac66e1ea3891ec99a43f66762965eece9bc9bb73
P138/train.jsonl 80281 ad6e4239b2a7690736f96faabc494e7efb5863eb95292e41321313338fd92190
P140/dev.jsonl 18916 bd06491771815be6cad0026b02c0a3f5326e2d68cfbd0569dfed6cb771245869
P140/train.jsonl 75679 b4aa795b6115cdbefcd2e829f6d51a9496d93a0563f307a6711f49ede6292097
P1412/dev.jsonl 18408 25d026b6328f42968b1b4670a615c6590911229729d50f6e81f2b230eea0600d
P1412/train.jsonl 73756 ac34bb953430c9ccaab9177a9bebb992ed3eea4d93408550b35f7b7c492e8eb2
P159/dev.jsonl 18882 97d279f4b0c85a8ee06e1a1c5be9bd384ade4d1afd65af0895ed5492a7dbb2ac
P159/train.jsonl 75404 66293bda5fd155996096807015fbc8948a968767ec687f0db27d8ac223b62b5c
P17/dev.jsonl 18924 68ea377903f067a3a03081d955a954ce05757e584c4cfa70120718b548d1f42c
P17/train.jsonl 75518 f628e2fc1fd9094702a9f4353182116bab69b0ac0bfa73652c6904458376b6f2
P176/dev.jsonl 18708 22b5afa4a22a705058f6eef4227ab962b9bacb691afa29c05fef22939e6f2584
P176/train.jsonl 75174 7b49fe9ef9c2912485edfaca1a9cee2fa941a85561b7f0e8444e955721613c34
P178/dev.jsonl 18778 c5292aa20d2eb74bf7a52008dc92604f39e1f6dc62a1d920e08b6ad00fdd2c88
P178/train.jsonl 75483 9efc35d350414524173850afc0a403ea61ad7df5cd81b7cfe5bba8b32fe33e0a
P19/dev.jsonl 18810 b26a1fe6db16056dd71c8fb1462f220c020074121b1a7ae46347ee130c8f8357
P19/train.jsonl 75136 acf15480288347d2913eb5367eab8b18eb5b86cf1eea42d34f46c614665ba579
P190/dev.jsonl 19024 1cdc79c3b273758e9b1ce8a720c18a997a16ba6b64e64dc1ca801dd743080fb9
P190/train.jsonl 76388 69b74473b1912a5ffc02aa2dfe8d51673cf28655785cedf205184280e0e3b2d3
P20/dev.jsonl 18709 bb38d52d2222f4faed71a2f9bc13fd76f95241691d32c143b37714257ccd16c5
P20/train.jsonl 75301 9689372133ef945e077a4ddf57cfddb1d4ef4fa37673fe55a2e135c3e415a5d9
P264/dev.jsonl 19113 6e13f37ec3a1649884f6d8437dd462bfcc0ececc0c6f685adfd7ba959dfc0a12
P264/train.jsonl 76300 68f5293a1beb9f44af1593afa36f4cd13db6d9fd85d5facc6bb9ee247a29f57c
P27/dev.jsonl 18099 ac178949aa5abbc9df329f0bdf3e97e6d77a6b57ec666c8dbfa5a2ce2e5cc302
P27/train.jsonl 72450 5df9a1354a565898a2d380ef188605b395b802bd5e2df31619d427d13cd5c2ce
P276/dev.jsonl 20203 50e0944be7d44117c05f315e735338c93d43bb18cad664c3fdbf8c2ee5b75c36
P276/train.jsonl 80829 b805efe078c750dfab2f5209eddb7d35598e459fbc2b9c8601985fbdbfa5a4a4
P279/dev.jsonl 19206 d69d7b7df5f001d93f284cae9eac72ce97224529dc4a1972c5495a85fe51d5d7
P279/train.jsonl 77308 07a48bf69ce67984274bdcabda5cfbdfb7c706bf569948646bbeb9174c5986f2
P30/dev.jsonl 18512 dacde8078cf51eef5e4ce142eca34d98aaac0783f0ea76a04303b9baad87b56b
P30/train.jsonl 74296 d4671a3ad554a1a13e459cc8e5e1d9b568cfa1cf224efbbd60a630d7d8fdc8e8
P31/dev.jsonl 18961 6f56d3636171213da66b78bbb66b5a4b83df678f0b4b5999eb160ffb52ac0ead
P31/train.jsonl 76351 77ac90a5bf55e8e5df207285fc74dad6b34875594f0571854a9a7301911b0378
P36/dev.jsonl 20090 5f1b476d574cd8935b8d299175c924d680396b49d1120f4033eac28d67fa9f65
P36/train.jsonl 79746 30723de89fce92a24d4f6cf388fe1d6363e2cd4d2a75adde690ac124b7a10e95
P361/dev.jsonl 19497 9cf7a25fc6f2048eebb3c948baa6b56bdcff0487320e919b318a45f9c8d8c5de
P361/train.jsonl 77987 7b793d484629128047fe91596e5fcdbc6b365d0ec2653301ba2e28a8d2d02db8
P364/dev.jsonl 18521 b873b36c84401ac6b44e8ed3478726301873c3a9c1982d1f7eb422038a597853
P364/train.jsonl 74157 8c60fd32db38f831847a3a3b7ad4ebd2f468cc01a7dd249cf392ba1da1e77ae2
P37/dev.jsonl 18406 7951b908423e9a94c90dbcb517187d65e15fda89a09b9211468def72439bdfe5
P37/train.jsonl 73153 d0777c76708c27a658073460398c8b0a52a4ddf16ac53c9170b347c3b7967f24
P39/dev.jsonl 18726 fcd9436facc22256f449d50791cc8885b69c9b186385efc24d245eec6afa685a
P39/train.jsonl 74823 06b10dbc05c1cbdce2f4b0c8e1b8aac8a3c8734ae0d490817657a490940982cc
P407/dev.jsonl 18676 2ab4504113c2781492943b0faf74d617f97a6f5426a9dac40d5c06419d043e48
P407/train.jsonl 74520 7ebf7126db6bda361aa031063a3a3457e95bafe30c0630574cbd98f6e4a0e018
P413/dev.jsonl 19182 083f113039d872a10d430da3a742053d71afd50f43db43841aea3687c88e7d45
P413/train.jsonl 76845 2eedfeb19d3aa25465f2192cb240c35a7a8ed3ebe596ed21f07cd6695686b4b6
P449/dev.jsonl 18456 949a7fb2b0479f1bb7215d77a282e82c15ceedfd78d1466b74714f2233433178
P449/train.jsonl 73997 e48936cc45d0915d5bdc3d8cb6c98582225b116d045d84026b94c60a4efff165
P463/dev.jsonl 18600 8de68309846dd4b319b9933b52145f21e0770022c2c76f6650bdc440cf649799
P463/train.jsonl 74768 446f51ec533f1939681da4df05943db013a357b7ea2624afb9464b0228bb3856
P47/dev.jsonl 20545 f870a5bf8392a8f8afc04d7e6819b848a5aef33a1a1bf3e375c043ed1de565fa
P47/train.jsonl 82747 274fead9dce40d62538da7403f1898a8ba057c05430f6aba482ef7ebafc7200d
P495/dev.jsonl 18136 9dd9e50474f9dacce987028a57d49c1d1cad0e338a125b1a13336802fbb6c869
P495/train.jsonl 72782 32cccd23e9902617bb037de1da5144d5db1be28b1401de4f58ca5cf6d66a2ff0
P527/dev.jsonl 19873 dd86b01e2ed2a5be73db26ebca8b9735704c4de3f48b2f0015c9d8e98034fd39
P527/train.jsonl 80585 3b2f144c4cf50d8d79d8e73c69d0df79d7e65f93b368c4d9cadef13265eb5fef
P530/dev.jsonl 17270 49dd9d3c3625d9c623abdafa93cec5e02b73c65965076e12a0580aad50508e03
P530/train.jsonl 69164 ad737826cc9374ca9cd35c77346db90be1655a2c392b987fcda2e63311499b43
P740/dev.jsonl 18658 c0883e1b21a9a30b48cb85959e282727e1fdd785d48c022220217b5714d80807
P740/train.jsonl 74589 1b1cb78e51fd5fbdf8d11fa5476250a06b6bf64e1678e2dd23b478c97a28db22
P937/dev.jsonl 9923 c4fd7d0644eee9b1c6d32c50db42dee08e8c734eda9f0d0fd4bef3459a5b9e45
P937/train.jsonl 40052 3886b702cbbe75d3f0c54c06048b710d4c306bd099a4205f08b04e1418e7fc60
"""),
        ),
    ),
    Source(
        "xfactr",
        "X-FACTR's English aliases, instance-of types and N-M objects of LAMA's T-REx entities",
        "no licence file",
        (
            Origin("jzbjyb/X-FACTR", "c1938ec7262ebc34ac0b39daff3f446e103e8a87",
                   "data", "xfactr", """
TREx_instanceof.txt 1187156 c31771ebd13d55a2c8f9994e30d6896768f93b9b1a332c5c879d3500ae0634fd
TREx_multi_rel.txt 364100 cac9baed6e1ad1270241007faffa57063e15a1a2db9bd9a6b9ff79ee77eafd0d
"""),
            Origin("jzbjyb/X-FACTR", "c1938ec7262ebc34ac0b39daff3f446e103e8a87",
                   "data/alias/TREx", "xfactr", """
alias_TREx_en.txt 1559078 58ae6a22893f95b387bcafd4a077ccc6fca757b2914686cf13c428aaefc4a1b3
""", renamed=(
                       ("alias_TREx_en.txt",
                        "en.txt"),
                   )),
        ),
    ),
    Source(
        "fewrel",
        "FewRel 1.0 validation split: 16 relations x 700 sentences, and relation names",
        "MIT",
        (
            Origin("thunlp/FewRel", "278a2315d2138810a379cd8d5718914dc56e2582",
                   "", "fewrel", """
LICENSE 1062 101669c6396d156750c0169a32e27b3b68eba95802aa9a1aa2aa3db5143bee76
"""),
            Origin("thunlp/FewRel", "278a2315d2138810a379cd8d5718914dc56e2582",
                   "data", "fewrel", """
pid2name.json 80278 eeedd25512a8e4c2bc06b78009836d27de81807bcba6ed929debd5cd713c07ea
val_wiki.json 3534147 76bb44c2485b6faed358a3ce040eadafcc8a8835245cd7e6afc1bef672d4a0bf
"""),
        ),
    ),
    Source(
        "tokenizers",
        "vocabularies of bert-base-cased/-uncased, gpt2 and roberta-base",
        "MIT (BlingFire); Apache-2.0 (BERT); Modified MIT (GPT-2)",
        (
            Origin("microsoft/BlingFire", "18e9a19e586095fb60d629fa850fb610d5bca605",
                   "ldbsrc/bert_base_cased_tok", "tokenizers/bert-base-cased", """
vocab.txt 213450 eeaa9875b23b04b4c54ef759d03db9d1ba1554838f8fb26c5d96fa551df93d02
"""),
            Origin("microsoft/BlingFire", "153ddfa89e27d706b8fb876f7bc27dcf3e383104",
                   "ldbsrc/bert_base_tok", "tokenizers/bert-base-uncased", """
vocab.txt 231508 07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
"""),
            Origin("microsoft/BlingFire", "18e9a19e586095fb60d629fa850fb610d5bca605",
                   "ldbsrc", "tokenizers", """
gpt2/merges.txt 456318 1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
gpt2/vocab.json 1042301 196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
"""),
            Origin("microsoft/BlingFire", "18e9a19e586095fb60d629fa850fb610d5bca605",
                   "ldbsrc/roberta", "tokenizers/roberta-base", """
merges.txt 456318 1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
vocab.json 898823 9e7f63c2d15d666b52e21d250d2e513b87c9b713cfa6987a82ed89e5e6e50655
"""),
        ),
    ),
    Source(
        "wikipedia-sample",
        "a 206-page English Wikipedia dump (bz2), for the text index and wikipedia2vec",
        "CC BY-SA (Wikipedia text)",
        (
            Origin("piskvorky/gensim", "a3e8a3fafc48554f03d21831d7b5bbf782e7c4ec",
                   "gensim/test/test_data", "wikipedia", """
enwiki-sample-206-pages.xml.bz2 1695871 a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d
""", renamed=(
                       ("enwiki-sample-206-pages.xml.bz2",
                        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"),
                   )),
        ),
    ),
)

BY_NAME = {s.name: s for s in SOURCES}
