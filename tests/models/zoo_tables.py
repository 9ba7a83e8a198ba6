"""The architectures tests/models/zoo_sweep.py exports: small configurations of transformers models
(2 layers, hidden 64; class names, looked up in the installed transformers, so that a release
without one skips it) and timm model names. Random weights: nothing is downloaded."""

# name: (config class, model class, config arguments); the model's first output is compared.
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
TEXT = {
  'bert': ('BertConfig', 'BertModel', SMALL), 'distilbert': ('DistilBertConfig', 'DistilBertModel', dict(dim=64, n_layers=2, n_heads=4, hidden_dim=128)),
  'roberta': ('RobertaConfig', 'RobertaModel', SMALL), 'albert': ('AlbertConfig', 'AlbertModel', dict(SMALL, embedding_size=32)),
  'electra': ('ElectraConfig', 'ElectraModel', dict(SMALL, embedding_size=32)), 'mobilebert': ('MobileBertConfig', 'MobileBertModel', dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, embedding_size=32, intra_bottleneck_size=32, true_hidden_size=32)),
  'deberta_v2': ('DebertaV2Config', 'DebertaV2Model', SMALL), 'deberta': ('DebertaConfig', 'DebertaModel', SMALL),
  'xlm_roberta': ('XLMRobertaConfig', 'XLMRobertaModel', SMALL), 'convbert': ('ConvBertConfig', 'ConvBertModel', dict(SMALL, embedding_size=64)),
  'squeezebert': ('SqueezeBertConfig', 'SqueezeBertModel', dict(SMALL, embedding_size=64, q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2, intermediate_groups=2, output_groups=2)),
  'mpnet': ('MPNetConfig', 'MPNetModel', SMALL), 'funnel': ('FunnelConfig', 'FunnelModel', dict(d_model=64, n_head=4, d_head=16, d_inner=128, block_sizes=[1, 1])),
  'gpt2': ('GPT2Config', 'GPT2Model', dict(n_embd=64, n_layer=2, n_head=4)), 'gpt_neox': ('GPTNeoXConfig', 'GPTNeoXModel', SMALL),
  'opt': ('OPTConfig', 'OPTModel', dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64)),
  'bloom': ('BloomConfig', 'BloomModel', dict(hidden_size=64, n_layer=2, n_head=4)), 'llama': ('LlamaConfig', 'LlamaModel', dict(SMALL, num_key_value_heads=2)),
  'mistral': ('MistralConfig', 'MistralModel', dict(SMALL, num_key_value_heads=2)), 'phi': ('PhiConfig', 'PhiModel', SMALL),
  'falcon': ('FalconConfig', 'FalconModel', dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4)),
  'gptj': ('GPTJConfig', 'GPTJModel', dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8)),
  'codegen': ('CodeGenConfig', 'CodeGenModel', dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8)),
  'xlnet': ('XLNetConfig', 'XLNetModel', dict(d_model=64, n_layer=2, n_head=4, d_inner=128)),
  'ctrl': ('CTRLConfig', 'CTRLModel', dict(n_embd=64, n_layer=2, n_head=4, dff=128)),
  'megatron_bert': ('MegatronBertConfig', 'MegatronBertModel', SMALL), 'canine': ('CanineConfig', 'CanineModel', SMALL),
  'rembert': ('RemBertConfig', 'RemBertModel', dict(SMALL, input_embedding_size=32, output_embedding_size=32)),
  'nystromformer': ('NystromformerConfig', 'NystromformerModel', dict(SMALL, num_landmarks=8, segment_means_seq_len=16)),
  'ibert': ('IBertConfig', 'IBertModel', SMALL), 'layoutlm': ('LayoutLMConfig', 'LayoutLMModel', SMALL),
  'big_bird': ('BigBirdConfig', 'BigBirdModel', dict(SMALL, attention_type='original_full')),
  't5enc': ('T5Config', 'T5EncoderModel', dict(d_model=64, num_layers=2, num_heads=4, d_ff=128, d_kv=16)),
  'mt5enc': ('MT5Config', 'MT5EncoderModel', dict(d_model=64, num_layers=2, num_heads=4, d_ff=128, d_kv=16)),
}
VISION = {
  'vit': ('ViTConfig', 'ViTModel', dict(SMALL, image_size=64, patch_size=8)),
  'deit': ('DeiTConfig', 'DeiTModel', dict(SMALL, image_size=64, patch_size=8)),
  'beit': ('BeitConfig', 'BeitModel', dict(SMALL, image_size=64, patch_size=8)),
  'swin': ('SwinConfig', 'SwinModel', dict(image_size=64, patch_size=4, embed_dim=32, depths=[1, 1], num_heads=[2, 4], window_size=4)),
  'convnext': ('ConvNextConfig', 'ConvNextModel', dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])),
  'segformer': ('SegformerConfig', 'SegformerModel', dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 8])),
  'dinov2': ('Dinov2Config', 'Dinov2Model', dict(SMALL, image_size=64, patch_size=8)),
  'mobilevit': ('MobileViTConfig', 'MobileViTModel', dict(image_size=64)),
  'levit': ('LevitConfig', 'LevitModel', dict(image_size=64)),
  'poolformer': ('PoolFormerConfig', 'PoolFormerModel', dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])),
  'resnet': ('ResNetConfig', 'ResNetModel', dict(hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 1, 1])),
  'regnet': ('RegNetConfig', 'RegNetModel', dict()),
  'efficientnet': ('EfficientNetConfig', 'EfficientNetModel', dict(image_size=64)),
  'clip_vision': ('CLIPVisionConfig', 'CLIPVisionModel', dict(SMALL, image_size=64, patch_size=8)),
  'data2vec_vision': ('Data2VecVisionConfig', 'Data2VecVisionModel', dict(SMALL, image_size=64, patch_size=8)),
  'dpt': ('DPTConfig', 'DPTModel', dict(SMALL, num_hidden_layers=4, image_size=64, patch_size=8, backbone_out_indices=[0, 1, 2, 3])),
  'yolos': ('YolosConfig', 'YolosModel', dict(SMALL, image_size=[64, 64], patch_size=8, num_detection_tokens=5)),
}
AUDIO = {
  'wav2vec2': ('Wav2Vec2Config', 'Wav2Vec2Model', dict(SMALL, conv_dim=[32, 32], conv_stride=[5, 2], conv_kernel=[10, 3], num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)),
  'hubert': ('HubertConfig', 'HubertModel', dict(SMALL, conv_dim=[32, 32], conv_stride=[5, 2], conv_kernel=[10, 3], num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)),
  'whisper_enc': ('WhisperConfig', 'WhisperModel.encoder', dict(d_model=64, encoder_layers=2, encoder_attention_heads=4, decoder_layers=2, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=80, max_source_positions=50)),
}

TIMM = ("botnet26t_256 cait_xxs24_224 coat_lite_tiny coatnet_nano_rw_224 convit_tiny convnext_atto convnextv2_atto crossvit_tiny_240 "
        "cspdarknet53 cspresnet50 davit_tiny deit_tiny_patch16_224 dla34 dm_nfnet_f0 dpn68 ecaresnet26t edgenext_xx_small "
        "efficientformer_l1 efficientnetv2_rw_t efficientvit_b0 ese_vovnet19b_dw eva02_tiny_patch14_224 fastvit_t8 focalnet_tiny_srf "
        "gcvit_xxtiny gernet_s ghostnet_100 gmlp_ti16_224 hardcorenas_a hrnet_w18_small inception_next_tiny inception_v4 "
        "lambda_resnet26t lcnet_050 levit_128s maxvit_nano_rw_256 mixnet_s mobilenetv2_050 mobilenetv3_large_100 mobileone_s0 "
        "mobilevit_xxs mvitv2_tiny nest_tiny nf_resnet26 pit_ti_224 poolformer_s12 regnety_002 regnetz_b16 repvgg_a0 "
        "res2net50_26w_4s resmlp_12_224 resnest14d resnet26d resnetv2_50 rexnet_100 selecsls42b sequencer2d_s "
        "seresnext26d_32x4d skresnet18 swin_tiny_patch4_window7_224 tf_efficientnet_lite0 tiny_vit_5m_224 tnt_s_patch16_224 "
        "twins_svt_small visformer_tiny vit_small_patch14_dinov2 vit_tiny_patch16_224 xception41 xcit_nano_12_p16_224 "
        "halonet26t hgnet_tiny volo_d1_224 mobilenetv4_conv_small fastvit_mci0 vitamin_small_224 hiera_tiny_224 "
        "efficientvit_m0 repghostnet_050 starnet_s1 rdnet_tiny").split()
