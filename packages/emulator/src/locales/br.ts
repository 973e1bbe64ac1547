/** Words for contacts from Brazil (pt-BR). */
import type { LocaleWords } from '../locale-words.js';

export const BR: LocaleWords = {
  country: 'BR',
  weight: 40,
  tld: 'com.br',
  linkGreeting: 'Olá! Quero saber mais sobre',
  firstNames: [
    'Ana', 'Maria', 'Juliana', 'Fernanda', 'Camila', 'Beatriz', 'Larissa', 'Mariana', 'Gabriela', 'Patrícia',
    'Aline', 'Bruna', 'Letícia', 'Amanda', 'Carolina', 'Vanessa', 'Renata', 'Tatiane', 'Luana', 'Débora',
    'Isabela', 'Helena', 'Luiza', 'Sofia', 'Alice', 'Manuela', 'Valentina', 'Cláudia', 'Simone', 'Adriana',
    'Maria Clara', 'Ana Luiza', 'Maria Eduarda', 'Ana Paula', 'Júlia', 'Raquel', 'Priscila', 'Natália', 'Rafaela', 'Elaine',
    'João', 'José', 'Pedro', 'Lucas', 'Gabriel', 'Rafael', 'Matheus', 'Gustavo', 'Felipe', 'Bruno',
    'Rodrigo', 'Thiago', 'Diego', 'Leonardo', 'Eduardo', 'Marcelo', 'André', 'Fábio', 'Ricardo', 'Carlos',
    'Paulo', 'Marcos', 'Daniel', 'Vinícius', 'Caio', 'Henrique', 'Igor', 'Renato', 'Sérgio', 'Otávio',
    'João Pedro', 'Luiz Fernando', 'Antônio', 'Francisco', 'Arthur', 'Heitor', 'Davi', 'Bernardo', 'Samuel', 'Wellington',
  ],
  lastNames: [
    'Silva', 'Santos', 'Oliveira', 'Souza', 'Rodrigues', 'Ferreira', 'Alves', 'Pereira', 'Lima', 'Gomes',
    'Costa', 'Ribeiro', 'Martins', 'Carvalho', 'Almeida', 'Lopes', 'Soares', 'Fernandes', 'Vieira', 'Barbosa',
    'Rocha', 'Dias', 'Nascimento', 'Andrade', 'Moreira', 'Nunes', 'Marques', 'Machado', 'Mendes', 'Freitas',
    'Cardoso', 'Ramos', 'Gonçalves', 'Santana', 'Teixeira', 'Araújo', 'Pinto', 'Moura', 'Cavalcanti', 'Correia',
    'Castro', 'Campos', 'Monteiro', 'Batista', 'Farias', 'Melo', 'Barros', 'Reis', 'Xavier', 'Duarte',
    'Azevedo', 'Borges', 'Nogueira', 'Queiroz', 'Siqueira', 'Miranda', 'Guimarães', 'Tavares', 'Pires', 'Bezerra',
  ],
  doubleSurname: 0.3,
  freeEmailDomains: ['gmail.com', 'hotmail.com', 'outlook.com', 'yahoo.com.br', 'uol.com.br', 'bol.com.br'],
  companyPatterns: ['{last} & {last2} Ltda', '{word} {sector}', '{word} {sector} Ltda', '{sector} {last}', 'Grupo {last}', '{last} {sector} S.A.', '{word} {sector} EIRELI'],
  companyWords: ['Nova', 'Alfa', 'Horizonte', 'Prisma', 'Atlântica', 'Vitória', 'Central', 'Brasil', 'Estrela', 'Real', 'Primus', 'Vale', 'Serra', 'Ipê', 'Aurora', 'Rota', 'Ponto', 'Mais', 'Sul', 'Norte'],
  sectors: ['Logística', 'Tecnologia', 'Consultoria', 'Alimentos', 'Engenharia', 'Transportes', 'Saúde', 'Educação', 'Imóveis', 'Distribuidora', 'Comércio', 'Seguros', 'Contabilidade', 'Marketing', 'Energia'],
  jobPatterns: ['{role} de {area}', '{role} de {area} {level}', '{role} {level} de {area}'],
  roles: ['Gerente', 'Coordenador', 'Analista', 'Diretor', 'Assistente', 'Especialista', 'Supervisor', 'Consultor', 'Head'],
  areas: ['Vendas', 'Marketing', 'Compras', 'Finanças', 'Operações', 'TI', 'Recursos Humanos', 'Logística', 'Atendimento', 'Produto', 'Comercial', 'Jurídico', 'Sucesso do Cliente'],
  levels: ['Sênior', 'Pleno', 'Júnior'],
  productPatterns: ['{kind}', '{kind} {edition}'],
  productKinds: ['Plano Empresarial', 'Curso de Inglês Online', 'Consultoria Tributária', 'Seguro Auto', 'CRM Vendas', 'Software de Gestão', 'Assinatura Anual', 'Consórcio Imobiliário', 'Plano Odontológico', 'Mentoria de Vendas', 'Pós-graduação EAD', 'Energia Solar', 'Cartão Corporativo', 'Plano de Saúde', 'Kit Revenda', 'Franquia Express', 'Sistema de Ponto', 'Maquininha de Cartão', 'Curso de Excel', 'Seguro Residencial'],
  editions: ['Pro', 'Plus', 'Premium', 'Essencial', 'Master'],
  headlinePatterns: [
    'Fale com um especialista no WhatsApp', '{product}: peça seu orçamento', '{product} com {n}% de desconto', 'Conheça o {product}',
    'Garanta seu {product} hoje', 'Últimas vagas: {product}', '{product} em até 12x sem juros', 'Teste grátis do {product}',
    'Simule agora o seu {product}', 'Atendimento rápido: {product}', '{n}% off no {product} esta semana', 'Tire suas dúvidas sobre o {product}',
  ],
};
